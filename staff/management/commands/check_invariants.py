from django.core.management.base import CommandError

from config.management.base import MongoCommand
from shop.selectors.invariants import invariant_keys, invariant_problems
from staff.selectors.counters import counter_problems


class Command(MongoCommand):
    help = (
        "Check every hold: per SKU free + held + sold == initial + restocks, "
        "free >= 0; per session taken seats == held + sold, seatsAvailable == "
        "real seats - taken, sold seats == the paid orders' tickets, no seat in "
        "two carts or two paid orders; the sales counters equal a recount of "
        "the orders; each reservation belongs to an active "
        "or pending cart listing exactly it; a paid order's cart is complete and "
        "a complete cart has a paid order (outside a running checkout's lease). "
        "Exits 1 naming the offenders."
    )

    def handle(self, *args, **options):
        # The staff dashboard's sales counters == a recount from the orders.
        problems = invariant_problems() + counter_problems()
        for problem in problems:
            self.stdout.write(str(problem))
        if problems:
            raise CommandError(
                "invariants broken for: " + ", ".join(invariant_keys(problems))
            )
        self.stdout.write("check_invariants: every invariant holds")
