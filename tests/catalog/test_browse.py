"""Faceted browse over the small catalog (see conftest.py's table)."""

from datetime import timedelta
from decimal import Decimal

import pytest

from catalog.selectors.browse import BrowseQuery, Cursor, browse
from tests.catalog.conftest import START, add_item


def counts(page, facet):
    for f in page.facets:
        if f.name == facet:
            return {v.value: v.count for v in f.values}
    return {}


def ids(page):
    return sorted(card.item_id for card in page.cards)


def test_department_counts_every_facet_value_once_per_item(small_catalog):
    page = browse(BrowseQuery(department="Shoes"))

    assert page.total == 5
    assert counts(page, "brand") == {"Aurelia": 2, "Brixton": 2, "Northfield": 1}
    assert counts(page, "size") == {"6": 3, "7": 2, "8": 2, "9": 2, "10": 1}
    assert counts(page, "colour") == {"black": 5, "red": 3, "tan": 2}
    assert counts(page, "price") == {"25-50": 2, "50-100": 2, "100-200": 1}
    assert [(c.label, c.count) for c in page.categories] == [("Men", 2), ("Women", 3)]


def test_a_facets_own_counts_ignore_its_selection_but_others_apply_it(small_catalog):
    page = browse(BrowseQuery(department="Shoes", selected={"brand": ("Aurelia",)}))

    assert ids(page) == ["1", "3"]
    # Disjunctive: ticking another brand would widen, so brands keep counts.
    assert counts(page, "brand") == {"Aurelia": 2, "Brixton": 2, "Northfield": 1}
    assert counts(page, "size") == {"6": 2, "7": 2}
    assert counts(page, "colour") == {"black": 2, "red": 2}
    assert counts(page, "price") == {"25-50": 2}


def test_values_of_one_facet_are_or_ed(small_catalog):
    page = browse(
        BrowseQuery(department="Shoes", selected={"brand": ("Aurelia", "Brixton")})
    )

    assert ids(page) == ["1", "2", "3", "5"]
    assert page.total == 4


def test_three_facets_combine_on_the_same_variant(small_catalog):
    query = BrowseQuery(
        department="Shoes",
        selected={"brand": ("Aurelia",), "size": ("7",), "colour": ("black",)},
    )

    page = browse(query)

    # Item 1 has a 7 in black; item 3 has a 7 (red) and a black (6) but no
    # black 7, so it does not match.
    assert ids(page) == ["1"]
    assert counts(page, "brand") == {"Aurelia": 1}
    # Sizes of Aurelia's black variants: item 1's 7, item 3's 6.
    assert counts(page, "size") == {"6": 1, "7": 1}
    # Colours of Aurelia's size 7 variants: item 1 red and black, item 3 red.
    assert counts(page, "colour") == {"black": 1, "red": 2}
    assert counts(page, "price") == {"25-50": 1}
    selected = {(f.name, v.value) for f in page.facets for v in f.values if v.selected}
    assert selected == {("brand", "Aurelia"), ("size", "7"), ("colour", "black")}


def test_size_and_colour_counts_under_each_other(small_catalog):
    page = browse(BrowseQuery(selected={"size": ("6",), "colour": ("black",)}))

    assert ids(page) == ["2", "3"]
    assert counts(page, "size") == {"6": 2, "7": 1, "9": 1, "10": 1, "M": 1}
    assert counts(page, "colour") == {"black": 2, "red": 1}
    assert counts(page, "brand") == {"Aurelia": 1, "Brixton": 1}
    assert [(d.label, d.count) for d in page.departments] == [("Shoes", 2)]


@pytest.mark.parametrize("department", ["Shoes", None])
def test_sizes_under_a_colour_count_only_the_variants_in_that_colour(
    small_catalog, department
):
    # Black variants: 1 in 7, 2 in 6, 3 in 6, 4 in 9, 5 in 10, 6 in M. Item 1
    # also has a 7 in red and item 3 a 7 in red: those do not count. With a
    # department the colour's own counts come from the scope's counts.
    page = browse(BrowseQuery(department=department, selected={"colour": ("black",)}))

    sizes = {"6": 2, "7": 1, "9": 1, "10": 1}
    if department is None:
        sizes["M"] = 1
    assert counts(page, "size") == sizes
    assert counts(page, "colour")["black"] == (5 if department else 6)


def test_a_selected_value_with_no_matches_stays_listed_to_be_unticked(small_catalog):
    page = browse(
        BrowseQuery(department="Clothing", selected={"brand": ("Northfield",)})
    )

    assert page.total == 0
    assert counts(page, "brand") == {"Aurelia": 1, "Northfield": 0}


def test_departments_are_counted_under_the_active_filters(small_catalog):
    everything = browse(BrowseQuery())
    aurelia = browse(BrowseQuery(selected={"brand": ("Aurelia",)}))

    assert [(d.label, d.count) for d in everything.departments] == [
        ("Clothing", 1),
        ("Shoes", 5),
    ]
    assert [(d.label, d.count) for d in aurelia.departments] == [
        ("Clothing", 1),
        ("Shoes", 2),
    ]


def test_category_prefix_selects_a_subtree(small_catalog):
    page = browse(BrowseQuery(department="Shoes", category="Shoes/Women"))

    assert ids(page) == ["1", "2", "3"]
    assert [(c.path, c.count) for c in page.categories] == [
        ("Shoes/Women/Boots", 1),
        ("Shoes/Women/Pumps", 2),
    ]


def test_category_prefix_never_matches_a_sibling_sharing_its_letters(small_catalog):
    add_item("7", "Shoes/Womenswear", "Canvas Tote", "Brixton", "20.00", 3.0, [])

    page = browse(BrowseQuery(department="Shoes", category="Shoes/Women"))

    assert "7" not in ids(page)


@pytest.mark.parametrize(
    ("category", "lookalike"),
    [
        ("Home/Kitchen+Dining", "Home/KitchennDining"),
        ("Home/Mugs.Cups", "Home/MugsXCups"),
        ("Home/(Sale)", "Home/Sale"),
        ("Home/Lamps*", "Home/Lamp"),
    ],
)
def test_regex_characters_in_a_category_are_literal(small_catalog, category, lookalike):
    add_item("8", category, "Real One", "Brixton", "20.00", 3.0, [])
    add_item("9", lookalike, "Lookalike", "Brixton", "20.00", 3.0, [])

    page = browse(BrowseQuery(department="Home", category=category))

    assert ids(page) == ["8"]


def test_unknown_category_is_reported_as_not_existing(small_catalog):
    page = browse(BrowseQuery(department="Shoes", category="Shoes/Hats"))

    assert page.exists is False
    assert page.total == 0


def test_keyword_search_matches_whole_words_and_a_half_typed_last_word(small_catalog):
    assert ids(browse(BrowseQuery(text="pumps"))) == ["1", "3"]
    assert ids(browse(BrowseQuery(text="PUM"))) == ["1", "3"]
    assert ids(browse(BrowseQuery(text="platform pu"))) == ["1"]
    # Brand, category and colour words are searchable too.
    assert ids(browse(BrowseQuery(text="brixton tan"))) == ["2", "5"]
    assert ids(browse(BrowseQuery(department="Shoes", text="black boots"))) == ["2"]


@pytest.mark.parametrize("text", ["(", ".*", "[a-z]+", "$ne", "\\", "^"])
def test_regex_characters_in_a_search_match_nothing_instead_of_everything(
    small_catalog, text
):
    page = browse(BrowseQuery(text=text))

    assert page.cards == []
    assert page.total == 0


def test_regex_characters_inside_a_search_word_are_literal(small_catalog):
    add_item("10", "Shoes/Men/Sneakers", "Air Glide 2.0", "Northfield", "80.00", 4, [])
    add_item("11", "Shoes/Men/Sneakers", "Air Glide 210", "Northfield", "80.00", 4, [])

    # Unescaped, "2.0" would match "210" as well.
    assert ids(browse(BrowseQuery(text="glide 2.0"))) == ["10"]
    assert ids(browse(BrowseQuery(text="2.0"))) == ["10"]


def test_relevance_puts_title_matches_first(small_catalog):
    # "black" is in the title of none, in the colours of five; "boots" in
    # one title: with both, only item 2 matches.
    add_item("12", "Shoes/Women/Boots", "Black Chelsea Boots", "Aurelia", "60", 3.0,
             [("5", "black")])  # fmt: skip

    page = browse(BrowseQuery(text="black boots", sort="relevance"))

    assert [c.item_id for c in page.cards] == ["12", "2"]


def test_price_range_bounds_are_inclusive_cents(small_catalog):
    page = browse(BrowseQuery(min_cents=4900, max_cents=9500))

    assert ids(page) == ["1", "4", "5"]
    assert counts(page, "brand") == {"Aurelia": 1, "Brixton": 1, "Northfield": 1}


def test_sorts_order_cards(small_catalog):
    def order(sort):
        return [c.item_id for c in browse(BrowseQuery(sort=sort)).cards]

    assert order("price_asc") == ["3", "1", "4", "5", "2", "6"]
    assert order("price_desc") == ["6", "2", "5", "4", "1", "3"]
    assert order("rating") == ["4", "6", "1", "5", "2", "3"]
    assert order("newest") == ["6", "5", "4", "3", "2", "1"]


def test_summary_price_is_the_lowest_online_variant_price(small_catalog):
    from catalog.services.products import price_set

    price_set(item_id="1", sku="1-7-black", scope="online", amount=Decimal("19.99"))

    card = next(c for c in browse(BrowseQuery(text="platform")).cards)
    assert card.price == Decimal("19.99")
    assert counts(browse(BrowseQuery(text="platform")), "price") == {"0-25": 1}


@pytest.fixture
def tied_catalog(mongo_db):
    """23 items: 3 prices, 2 ratings, so most sort keys are shared."""
    for n in range(23):
        add_item(
            f"t{n:02d}",
            "Home/Decor/Cushions",
            f"Cushion {n}",
            "Brixton",
            ["10.00", "12.00", "15.00"][n % 3],
            [4.0, 4.5][n % 2],
            [],
            created_at=START + timedelta(days=n % 2),
        )
    return mongo_db


def all_pages(query):
    seen, pages, after = [], 0, None
    while True:
        page = browse(BrowseQuery(**{**query, "after": after}))
        seen += [c.item_id for c in page.cards]
        pages += 1
        after = page.next_cursor
        if after is None:
            return seen, pages
        assert pages < 50, "paging does not end"


@pytest.mark.parametrize("sort", ["price_asc", "price_desc", "rating", "newest"])
def test_keyset_pages_never_skip_or_repeat_items_with_equal_keys(tied_catalog, sort):
    seen, pages = all_pages({"department": "Home", "sort": sort, "per_page": 4})

    assert pages == 6
    assert len(seen) == len(set(seen)) == 23
    whole = [c.item_id for c in browse(BrowseQuery(sort=sort, per_page=96)).cards]
    assert seen == whole


def test_keyset_paging_of_a_search_by_relevance(tied_catalog):
    seen, _pages = all_pages({"text": "cushion", "sort": "relevance", "per_page": 5})

    assert len(seen) == len(set(seen)) == 23


def test_next_cursor_carries_the_last_sort_value_and_id(tied_catalog):
    page = browse(BrowseQuery(sort="price_asc", per_page=4))

    # Prices 10.00 go to t00, t03, t06, ...: the fourth is t09.
    assert page.next_cursor == Cursor(value=1000, item_id="t09")
    second = browse(BrowseQuery(sort="price_asc", per_page=4, after=page.next_cursor))
    assert [c.item_id for c in second.cards] == ["t12", "t15", "t18", "t21"]
