from django.core.management.base import CommandError

from config.management.base import MongoCommand
from shop.selectors.invariants import invariant_keys, invariant_problems


class Command(MongoCommand):
    help = (
        "Check every hold: per SKU free + held + sold == initial + restocks, "
        "free >= 0, and each reservation belongs to an active or pending cart "
        "listing it with the same quantity. Exits 1 naming the offenders."
    )

    def handle(self, *args, **options):
        problems = invariant_problems()
        for problem in problems:
            self.stdout.write(str(problem))
        if problems:
            raise CommandError(
                "invariants broken for: " + ", ".join(invariant_keys(problems))
            )
        self.stdout.write("check_invariants: every invariant holds")
