"""The shop's pages: thin views that parse with a form, call one service or
selector, and render.

``cart`` (the cart page and its changes), ``seats`` (a performance's seat
map, whose clicks hold and release seats on the cart) and ``orders``
(checkout and the shopper's orders). A refusal is raised, never caught
here: ``config.http.answers_refusals`` hands it to the module's answer.
"""
