from catalog.services.scopes import browse_scopes_rebuild
from catalog.services.summaries import summaries_rescope
from config.management.base import MongoCommand


class Command(MongoCommand):
    help = (
        "Recount the browse scopes (facet, category and sort-bucket counts per "
        "department and category) from the summaries, after giving any summary "
        "stored without its scopes its scopes. Safe to run at any time; the "
        "scheduled job 'rebuild_browse_scopes' recounts every hour."
    )

    def handle(self, *args, **options):
        rescoped = summaries_rescope()
        counted = browse_scopes_rebuild()
        self.stdout.write(
            f"browse_rebuild: {rescoped} summaries given their scopes, "
            f"{counted} scopes recounted"
        )
