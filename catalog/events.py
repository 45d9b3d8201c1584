"""What the catalog's pages announce as shoppers use them.

The catalog sits below the apps that listen (the activity log): it must not
know who they are. Signals are sent by the views after the page's data is
read; receivers run in the same request, so they must be quick.
"""

from django.dispatch import Signal

# request, item_id, sku: an item page was shown (sku: the chosen variant).
item_viewed = Signal()
# request, text, results: a keyword search's first page was shown.
searched = Signal()
