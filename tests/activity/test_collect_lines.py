"""The activity log keeps a collect line by its SKU, not its stock location."""

from activity.services.receivers import order_lines


def test_a_collect_line_is_logged_by_its_sku():
    order = {
        "lines": [
            {"kind": "product", "key": "SNKR-42", "quantity": 1},
            {"kind": "product", "key": "SNKR-42@leeds", "quantity": 2},
        ]
    }

    assert order_lines(order) == [
        {"sku": "SNKR-42", "qty": 1},
        {"sku": "SNKR-42", "qty": 2},
    ]
