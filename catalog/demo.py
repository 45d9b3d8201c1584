"""Demo data of the catalog app, loaded by ``manage.py load_demo``.

A believable catalogue: six departments with category trees, brands, sizes
and colours, 3 to 30 variants per item, online prices with store-group,
store and variant overrides, 53 stores across three UK regions, and stock of
each item in a few stores (their stock locations, as click & collect
reserves them). Deterministic for a given seed.

Written in bulk (``insert_many`` per batch), never document by document;
summaries come from ``summary_of``, the function the rebuild service uses.
"""

import random
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from bson import Decimal128

from catalog import scopes
from catalog.documents import (
    ONLINE,
    BrowseScope,
    Item,
    Price,
    Store,
    StoreStock,
    Summary,
    Variant,
)
from catalog.services.products import item_keywords
from catalog.services.scopes import scopes_write
from catalog.services.stock import stock_open
from catalog.services.store_stock import store_stocks_open
from catalog.services.summaries import summary_of
from config.progress import Progress

# Items per bulk write (one insert_many per collection) and per step of the
# progress bar.
BATCH = 200
NOW = datetime(2026, 6, 1, tzinfo=UTC)

# (city, zip, lat, lng) by price group (stores of a group share regional
# prices); each store's region is its true one, below.
REGIONS = {
    "North": [
        ("Leeds", "LS1 6HD", 53.7997, -1.5437),
        ("Manchester", "M1 1AE", 53.4808, -2.2426),
        ("Liverpool", "L1 8JQ", 53.4046, -2.9857),
        ("Newcastle", "NE1 7RU", 54.9738, -1.6132),
        ("Sheffield", "S1 2HE", 53.3811, -1.4701),
        ("York", "YO1 9QL", 53.9590, -1.0843),
        ("Bradford", "BD1 1US", 53.7930, -1.7520),
        ("Hull", "HU1 3DZ", 53.7443, -0.3326),
        ("Sunderland", "SR1 3LE", 54.9069, -1.3838),
        ("Preston", "PR1 2NR", 53.7590, -2.7000),
        ("Lancaster", "LA1 1LZ", 54.0466, -2.8007),
        ("Carlisle", "CA3 8JH", 54.8925, -2.9329),
        ("Durham", "DH1 3NJ", 54.7761, -1.5733),
        ("Middlesbrough", "TS1 2NT", 54.5742, -1.2350),
        ("Harrogate", "HG1 1BL", 53.9921, -1.5418),
        ("Wakefield", "WF1 1QX", 53.6833, -1.4977),
        ("Bolton", "BL1 1DS", 53.5769, -2.4282),
        ("Blackpool", "FY1 4HU", 53.8175, -3.0357),
    ],
    "Midlands": [
        ("Birmingham", "B2 4QA", 52.4797, -1.8971),
        ("Nottingham", "NG1 2GF", 52.9536, -1.1505),
        ("Leicester", "LE1 4FQ", 52.6355, -1.1356),
        ("Coventry", "CV1 1LL", 52.4081, -1.5101),
        ("Derby", "DE1 2PL", 52.9212, -1.4759),
        ("Wolverhampton", "WV1 3NH", 52.5862, -2.1275),
        ("Stoke-on-Trent", "ST1 1PS", 53.0250, -2.1770),
        ("Northampton", "NN1 2EW", 52.2384, -0.8963),
        ("Lincoln", "LN2 1HJ", 53.2307, -0.5406),
        ("Worcester", "WR1 3LD", 52.1936, -2.2216),
        ("Shrewsbury", "SY1 1SS", 52.7073, -2.7553),
        ("Cambridge", "CB2 3BJ", 52.2053, 0.1218),
        ("Norwich", "NR2 1QD", 52.6290, 1.2932),
        ("Peterborough", "PE1 1NT", 52.5733, -0.2426),
        ("Oxford", "OX1 3AP", 51.7520, -1.2577),
        ("Milton Keynes", "MK9 3ES", 52.0429, -0.7547),
        ("Leamington Spa", "CV32 4AT", 52.2893, -1.5352),
    ],
    "South": [
        ("London", "W1D 1BS", 51.5150, -0.1410),
        ("London", "E20 1EJ", 51.5431, -0.0066),
        ("London", "SW7 2RL", 51.4966, -0.1722),
        ("London", "EC2V 6DN", 51.5154, -0.0922),
        ("Bristol", "BS1 3BX", 51.4584, -2.5847),
        ("Brighton", "BN1 1HS", 50.8225, -0.1412),
        ("Southampton", "SO14 7DU", 50.9060, -1.4050),
        ("Portsmouth", "PO1 1JD", 50.7989, -1.0912),
        ("Reading", "RG1 2AG", 51.4555, -0.9694),
        ("Bath", "BA1 1SU", 51.3811, -2.3590),
        ("Exeter", "EX1 1GE", 50.7253, -3.5269),
        ("Plymouth", "PL1 1EA", 50.3714, -4.1422),
        ("Cardiff", "CF10 2EF", 51.4791, -3.1768),
        ("Canterbury", "CT1 2JE", 51.2798, 1.0803),
        ("Guildford", "GU1 3DS", 51.2362, -0.5704),
        ("Bournemouth", "BH1 1BA", 50.7206, -1.8794),
        ("Swindon", "SN1 1LF", 51.5602, -1.7856),
        ("Cheltenham", "GL50 1JJ", 51.8994, -2.0783),
    ],
}

# The region (England's ITL 1 regions, and Wales) each store's city is in.
REGION_OF = {
    **dict.fromkeys(
        ["Newcastle", "Sunderland", "Durham", "Middlesbrough"], "North East"
    ),
    **dict.fromkeys(
        ["Manchester", "Liverpool", "Preston", "Lancaster", "Carlisle", "Bolton"]
        + ["Blackpool"],
        "North West",
    ),
    **dict.fromkeys(
        ["Leeds", "Sheffield", "York", "Bradford", "Hull", "Harrogate", "Wakefield"],
        "Yorkshire and the Humber",
    ),
    **dict.fromkeys(
        ["Birmingham", "Coventry", "Wolverhampton", "Stoke-on-Trent", "Worcester"]
        + ["Shrewsbury", "Leamington Spa"],
        "West Midlands",
    ),
    **dict.fromkeys(
        ["Nottingham", "Leicester", "Derby", "Northampton", "Lincoln"], "East Midlands"
    ),
    **dict.fromkeys(["Cambridge", "Norwich", "Peterborough"], "East of England"),
    **dict.fromkeys(
        ["Oxford", "Milton Keynes", "Brighton", "Southampton", "Portsmouth"]
        + ["Reading", "Canterbury", "Guildford"],
        "South East",
    ),
    "London": "London",
    **dict.fromkeys(
        ["Bristol", "Bath", "Exeter", "Plymouth", "Bournemouth", "Swindon"]
        + ["Cheltenham"],
        "South West",
    ),
    "Cardiff": "Wales",
}

SHOE_SIZES = [str(n) for n in range(3, 13)]
CLOTHING_SIZES = ["XS", "S", "M", "L", "XL", "XXL"]
COLOURS = [
    "Black", "White", "Navy", "Grey", "Red", "Tan", "Green", "Blue",
    "Burgundy", "Cream", "Pink", "Olive",
]  # fmt: skip

# department -> (brands, materials, styles, {category path: (nouns, low, high)},
#                sizes for the department or None)
DEPARTMENTS = {
    "Shoes": (
        [
            "Aurelia",
            "Brixton & Co",
            "Northfield",
            "Calder",
            "Marlow",
            "Oakridge",
            "Rivet",
            "Sable",
        ],
        ["Suede", "Leather", "Canvas", "Patent", "Knit", "Nubuck"],
        ["Designer", "Casual", "Classic", "Sport", "Evening"],
        {
            "Shoes/Women/Pumps": (
                ["Platform Pumps", "Court Shoes", "Slingbacks"],
                35,
                180,
            ),
            "Shoes/Women/Boots": (
                ["Ankle Boots", "Chelsea Boots", "Knee Boots"],
                55,
                240,
            ),
            "Shoes/Women/Sneakers": (["Trainers", "Runners", "Low Tops"], 40, 140),
            "Shoes/Women/Sandals": (["Sandals", "Sliders", "Espadrilles"], 20, 90),
            "Shoes/Men/Sneakers": (["Trainers", "Runners", "High Tops"], 40, 150),
            "Shoes/Men/Boots": (
                ["Chelsea Boots", "Work Boots", "Desert Boots"],
                60,
                220,
            ),
            "Shoes/Men/Loafers": (["Loafers", "Brogues", "Derbies"], 50, 200),
            "Shoes/Kids/School": (["School Shoes", "T-Bar Shoes"], 20, 55),
            "Shoes/Kids/Sneakers": (["Trainers", "Light-Up Trainers"], 18, 60),
        },
        SHOE_SIZES,
    ),
    "Clothing": (
        [
            "Harbour Lane",
            "Wren",
            "Fielding",
            "Ostara",
            "Kestrel",
            "Loom & Pine",
            "Marlow",
            "Tamsin",
        ],
        ["Cotton", "Linen", "Wool", "Denim", "Cashmere", "Jersey"],
        ["Relaxed", "Tailored", "Classic", "Oversized", "Slim"],
        {
            "Clothing/Women/Dresses": (
                ["Midi Dress", "Wrap Dress", "Shirt Dress"],
                30,
                160,
            ),
            "Clothing/Women/Tops": (["Blouse", "Knit Top", "Tee"], 15, 70),
            "Clothing/Women/Coats": (["Trench Coat", "Wool Coat", "Parka"], 80, 320),
            "Clothing/Women/Jeans": (["Straight Jeans", "Wide Leg Jeans"], 35, 110),
            "Clothing/Men/Shirts": (
                ["Oxford Shirt", "Flannel Shirt", "Linen Shirt"],
                25,
                95,
            ),
            "Clothing/Men/T-Shirts": (["Crew Tee", "Pocket Tee", "Henley"], 12, 45),
            "Clothing/Men/Jackets": (
                ["Harrington Jacket", "Field Jacket", "Blazer"],
                70,
                280,
            ),
            "Clothing/Men/Jeans": (["Slim Jeans", "Straight Jeans", "Chinos"], 35, 110),
            "Clothing/Kids/Tops": (["Hoodie", "Sweatshirt", "Tee"], 8, 35),
        },
        CLOTHING_SIZES,
    ),
    "Home": (
        ["Hearth", "Linden", "Copperfield", "Nordby", "Ashgrove", "Willow & Wick"],
        ["Ceramic", "Oak", "Linen", "Stoneware", "Brass", "Cotton"],
        ["Scandi", "Rustic", "Modern", "Classic"],
        {
            "Home/Kitchen/Cookware": (
                ["Casserole Dish", "Frying Pan", "Saucepan Set"],
                20,
                190,
            ),
            "Home/Kitchen/Tableware": (
                ["Dinner Plates", "Pasta Bowls", "Mug Set"],
                12,
                70,
            ),
            "Home/Bedding/Duvet Covers": (["Duvet Cover Set", "Bedspread"], 30, 140),
            "Home/Bedding/Pillows": (["Pillow Pair", "Cushion"], 12, 60),
            "Home/Decor/Lamps": (
                ["Table Lamp", "Floor Lamp", "Pendant Shade"],
                25,
                220,
            ),
            "Home/Decor/Frames": (["Photo Frame", "Gallery Frame Set"], 8, 55),
        },
        ["Single", "Double", "King", "Super King"],
    ),
    "Sports": (
        ["Pacer", "Summit", "Velo", "Tidewater", "Ironbark", "Fleetfoot"],
        ["Mesh", "Merino", "Recycled Poly", "Softshell", "Ripstop"],
        ["Performance", "Training", "Outdoor", "Race"],
        {
            "Sports/Running/Tops": (["Running Tee", "Long Sleeve Top", "Vest"], 18, 70),
            "Sports/Running/Shorts": (["Running Shorts", "Tights"], 18, 65),
            "Sports/Cycling/Jerseys": (["Cycling Jersey", "Gilet"], 35, 140),
            "Sports/Cycling/Helmets": (["Road Helmet", "Commuter Helmet"], 30, 180),
            "Sports/Yoga/Apparel": (["Yoga Leggings", "Bra Top", "Joggers"], 20, 85),
        },
        CLOTHING_SIZES,
    ),
    "Beauty": (
        ["Lumen", "Petal & Stone", "Sorrel", "Aquila", "Nectar", "Verity"],
        ["Rose", "Vitamin C", "Hyaluronic", "Oat", "Neroli", "Vetiver"],
        ["Clean", "Luxury", "Everyday", "Sensitive"],
        {
            "Beauty/Skincare/Moisturisers": (
                ["Day Cream", "Night Cream", "Gel Cream"],
                12,
                80,
            ),
            "Beauty/Skincare/Serums": (["Serum", "Facial Oil", "Essence"], 15, 95),
            "Beauty/Fragrance/Women": (["Eau de Parfum", "Eau de Toilette"], 30, 150),
            "Beauty/Fragrance/Men": (["Eau de Parfum", "Aftershave"], 30, 140),
            "Beauty/Makeup/Lips": (["Lipstick", "Lip Gloss", "Lip Liner"], 8, 35),
        },
        ["15ml", "30ml", "50ml", "100ml"],
    ),
    "Accessories": (
        ["Atlas", "Fenwick", "Juniper", "Crest", "Morrow", "Halden"],
        ["Leather", "Canvas", "Silver", "Gold Plated", "Steel", "Nylon"],
        ["Minimal", "Heritage", "Statement", "Everyday"],
        {
            "Accessories/Bags/Backpacks": (["Backpack", "Rolltop Backpack"], 35, 180),
            "Accessories/Bags/Totes": (["Tote Bag", "Shopper"], 20, 150),
            "Accessories/Jewellery/Rings": (["Stacking Ring", "Signet Ring"], 25, 200),
            "Accessories/Jewellery/Necklaces": (
                ["Pendant Necklace", "Chain Necklace"],
                25,
                220,
            ),
            "Accessories/Watches/Analogue": (["Field Watch", "Dress Watch"], 80, 450),
        },
        ["S", "M", "L"],
    ),
}
# What a category's variants differ by where the department's sizes,
# colours and materials do not fit it: (sizes, None for one size; colours,
# None for none; materials, None for the department's).
JEANS_SIZES = ["28", "30", "32", "34", "36"]
DENIM = (JEANS_SIZES, ["Blue", "Black", "Grey"], ["Denim", "Stretch Denim"])
FITS = {
    "Clothing/Women/Jeans": DENIM,
    "Clothing/Men/Jeans": DENIM,
    "Clothing/Women/Coats": (CLOTHING_SIZES, None, ["Wool", "Cashmere", "Twill"]),
    "Home/Kitchen/Cookware": (
        ["16cm", "20cm", "24cm", "28cm"],
        ["Black", "Red", "Cream", "Green", "Blue"],
        ["Cast Iron", "Stainless Steel", "Enamelled Steel", "Copper"],
    ),
    "Home/Kitchen/Tableware": (
        ["Set of 2", "Set of 4", "Set of 6"],
        ["White", "Cream", "Blue", "Green", "Grey"],
        ["Stoneware", "Porcelain", "Ceramic"],
    ),
    "Home/Bedding/Duvet Covers": (
        ["Single", "Double", "King", "Super King"],
        ["White", "Grey", "Navy", "Cream", "Pink"],
        ["Cotton", "Linen", "Cotton Percale"],
    ),
    "Home/Bedding/Pillows": (
        ["Standard", "King"],
        ["White", "Grey", "Cream", "Navy"],
        ["Cotton", "Linen", "Velvet"],
    ),
    "Home/Decor/Lamps": (
        None,
        ["Black", "White", "Cream", "Green", "Grey"],
        ["Brass", "Ceramic", "Oak", "Glass"],
    ),
    "Home/Decor/Frames": (
        ["10x15cm", "13x18cm", "A4", "A3"],
        ["Black", "White", "Tan"],
        ["Oak", "Walnut", "Brass"],
    ),
    "Sports/Cycling/Helmets": (
        ["S", "M", "L"],
        ["Black", "White", "Red", "Blue"],
        ["Polycarbonate", "Carbon"],
    ),
    "Beauty/Skincare/Moisturisers": (["15ml", "30ml", "50ml", "100ml"], None, None),
    "Beauty/Skincare/Serums": (["15ml", "30ml", "50ml"], None, None),
    "Beauty/Fragrance/Women": (["30ml", "50ml", "100ml"], None, None),
    "Beauty/Fragrance/Men": (["30ml", "50ml", "100ml"], None, None),
    # Lipsticks come in shades, one size.
    "Beauty/Makeup/Lips": (None, ["Red", "Pink", "Burgundy", "Cream", "Tan"], None),
    "Accessories/Bags/Backpacks": (
        None,
        ["Black", "Navy", "Olive", "Tan", "Grey"],
        ["Leather", "Canvas", "Nylon"],
    ),
    "Accessories/Bags/Totes": (
        None,
        ["Black", "Tan", "Cream", "Navy", "Burgundy"],
        ["Leather", "Canvas"],
    ),
    "Accessories/Jewellery/Rings": (
        ["J", "L", "N", "P", "R"],
        None,
        ["Silver", "Gold Plated", "Rose Gold Plated"],
    ),
    "Accessories/Jewellery/Necklaces": (
        ["40cm", "45cm", "50cm"],
        None,
        ["Silver", "Gold Plated"],
    ),
    "Accessories/Watches/Analogue": (
        ["36mm", "40mm", "42mm"],
        ["Black", "Tan", "Navy", "Green"],
        ["Steel", "Titanium"],
    ),
}

ADJECTIVES = [
    "Evening", "Classic", "Everyday", "Weekend", "Essential", "Heritage",
    "Studio", "Coastal", "Urban", "Lightweight", "Signature", "Soft",
]  # fmt: skip


def _stores() -> list[dict]:
    stores, n = [], 0
    for group, places in REGIONS.items():
        for city, zip_code, lat, lng in places:
            n += 1
            street = ["High Street", "Market Street", "King Street", "Church Street"]
            stores.append(
                {
                    "store_id": f"store{n:02d}",
                    "name": f"{city} {zip_code.split()[0]}",
                    "group": f"sg-{group.lower()}",
                    "region": REGION_OF[city],
                    "address": {
                        "line1": f"{n * 7 % 200 + 1} {street[n % 4]}",
                        "city": city,
                        "region": REGION_OF[city],
                        "zip": zip_code,
                        "country": "GB",
                    },
                    "location": {"type": "Point", "coordinates": [lng, lat]},
                }
            )
    return stores


def _money(rng: random.Random, low: float, high: float) -> Decimal:
    pounds = rng.uniform(low, high)
    ending = rng.choice([".00", ".00", ".50", ".99"])
    return Decimal(f"{int(pounds)}{ending}") if pounds >= 1 else Decimal("0.99")


def _variant_attributes(rng: random.Random, department: str, sizes, colours):
    """3 to 30 variants: sizes and colours (from the category's own lists;
    ``sizes`` or ``colours`` None when it has none), most items near the
    bottom."""
    if colours is None:  # sizes only: a run of at least three
        length = min(len(sizes), rng.choice([3, 3, 4, 5]))
        start = rng.randrange(len(sizes) - length + 1)
        return [{"size": size} for size in sizes[start : start + length]]
    if sizes is None:  # colours (shades) only
        return [{"colour": c} for c in rng.sample(colours, min(len(colours), 3))]
    picked = rng.sample(colours, min(len(colours), rng.choice([1, 1, 2, 2, 3, 4])))
    if rng.random() < 0.05:  # a few items in every size and colour
        picked = rng.sample(colours, min(len(colours), 3))
        run = sizes
    else:
        length = min(len(sizes), rng.choice([2, 3, 3, 4, 5, 6]))
        start = rng.randrange(len(sizes) - length + 1)
        run = sizes[start : start + length]
    combos = [{"size": s, "colour": c} for c in picked for s in run]
    while len(combos) < 3:
        extra = rng.choice([c for c in colours if c not in picked])
        picked.append(extra)
        combos += [{"size": s, "colour": extra} for s in run]
    combos = combos[:30]
    if department == "Shoes":
        for combo in combos:
            if rng.random() < 0.2:
                combo["width"] = "Wide fit"
    return combos


def _description(title, brand, style, category, material) -> str:
    start = f"{title} by {brand}: {style.lower()} {category.split('/')[-1].lower()}"
    if category.startswith("Beauty/"):
        return f"{start} with {material.lower()}."
    return f"{start} in {material.lower()}, made to last."


def _prices(rng: random.Random, base, variants, store_ids, groups) -> dict:
    """The item's online price and, for some items, regional, per-size,
    clearance and per-colourway prices (price document id -> amount)."""
    item_id = variants[0]["item_id"]
    prices = {f"{item_id}_{ONLINE}": base}
    if rng.random() < 0.3:  # regional pricing for a group or two
        for group in rng.sample(groups, rng.choice([1, 2])):
            factor = Decimal(str(rng.choice([0.9, 0.95, 1.05, 1.1])))
            prices[f"{item_id}_{group}"] = (base * factor).quantize(Decimal("1.00"))
    if rng.random() < 0.15:  # bigger sizes cost a little more online
        for variant in variants[len(variants) // 2 :]:
            prices[f"{variant['_id']}_{ONLINE}"] = base + Decimal("5.00")
    if rng.random() < 0.05:  # clearance in a few stores
        for store_id in rng.sample(store_ids, 3):
            prices[f"{item_id}_{store_id}"] = (base * Decimal("0.7")).quantize(
                Decimal("1.00")
            )
    if rng.random() < 0.03:  # one colourway discounted in one group
        prices[f"{variants[0]['_id']}_{rng.choice(groups)}"] = base - Decimal("1.00")
    return prices


def _item(rng: random.Random, n: int, store_ids, groups):
    item_id = str(100000 + n)
    department = rng.choice(list(DEPARTMENTS))
    brands, materials, styles, categories, sizes = DEPARTMENTS[department]
    category = rng.choice(list(categories))
    nouns, low, high = categories[category]
    sizes, colours, fitting = FITS.get(category, (sizes, COLOURS, None))
    brand, material = rng.choice(brands), rng.choice(fitting or materials)
    style = rng.choice(styles)
    title = f"{rng.choice(ADJECTIVES)} {material} {rng.choice(nouns)}"
    item = {
        "_id": item_id,
        "department": department,
        "category": category,
        "brand": brand,
        "title": title,
        "description": _description(title, brand, style, category, material),
        "style": style,
        "thumbnail": None,
        "rating": round(min(5.0, max(1.0, rng.gauss(4.1, 0.55))), 1),
        "keywords": item_keywords(title=title, brand=brand, style=style),
        # Beauty's "materials" are its key ingredients.
        "attributes": {
            "ingredient" if department == "Beauty" else "material": material
        },
        "created_at": NOW - timedelta(days=rng.randrange(730), minutes=n),
        "version": 0,
    }
    variants = [
        {"_id": f"{item_id}{j:03d}", "item_id": item_id, "attributes": attrs}
        for j, attrs in enumerate(
            _variant_attributes(rng, department, sizes, colours), 1
        )
    ]

    prices = _prices(rng, _money(rng, low, high), variants, store_ids, groups)
    return item, variants, prices


def _stock(rng: random.Random, item, variants, stores) -> dict[tuple[str, str], int]:
    """A few stores' counts of the item's variants, (store_id, sku) -> units;
    a store that has run out of a variant simply does not stock it."""
    counts = {}
    for store in rng.sample(stores, rng.randint(3, 8)):
        for v in variants:
            units = 0 if rng.random() < 0.25 else rng.randint(1, 12)
            if units:
                counts[(store["store_id"], v["_id"])] = units
    return counts


# Stock (online and in stores) is not deleted: a second load keeps every
# location's counters and holds (``stock_open`` opens only new ones).
COLLECTIONS = (Item, Variant, Price, Summary, BrowseScope, StoreStock, Store)


def _batch(rng, numbers, store_ids, groups, stores) -> dict[str, list]:
    """The documents of the items ``numbers``: items, variants, prices,
    browse summaries and store stock."""
    batch: dict = {name: [] for name in ("items", "variants", "prices", "summaries")}
    batch["stock"] = {}
    for n in numbers:
        item, variants, prices = _item(rng, n, store_ids, groups)
        batch["items"].append(item)
        batch["variants"] += variants
        batch["prices"] += [
            {"_id": pid, "amount": Decimal128(amount)} for pid, amount in prices.items()
        ]
        summary = summary_of(item=item, variants=variants, prices=prices)
        if summary is not None:
            batch["summaries"].append(summary)
        batch["stock"].update(_stock(rng, item, variants, stores))
    return batch


def _open_online(rng: random.Random, variants) -> int:
    """Online stock for the web shop's carts: a few SKUs run low so shoppers
    see "only 2 left"; SKUs that already have stock (a second load) keep
    theirs, holds included. Returns how many SKUs were opened."""
    return stock_open(
        quantities={
            v["_id"]: rng.choice([2, 3, 5])
            if rng.random() < 0.1
            else rng.randint(10, 60)
            for v in variants
        }
    )


def load(*, items: int, seed: int, out) -> None:
    """Replace the catalogue with ``items`` generated items (and the stores)."""
    started = time.monotonic()
    rng = random.Random(seed)
    for document in COLLECTIONS:
        document.coll().delete_many({})
    stores = _stores()
    Store.coll().insert_many([dict(s) for s in stores])
    store_ids = [s["store_id"] for s in stores]
    groups = sorted({s["group"] for s in stores})

    # Online stock has a generator of its own, so the catalogue drawn for a
    # seed stays the same whether or not the shop's stock is opened with it.
    online_rng = random.Random(seed + 1)
    totals = dict.fromkeys(["variants", "prices", "stock", "online"], 0)
    # The browse scopes' counts, summed as the summaries are made.
    tally = scopes.Tally()
    with Progress("catalog items", items, stream=out) as progress:
        for first in range(0, items, BATCH):
            numbers = range(first, min(first + BATCH, items))
            batch = _batch(rng, numbers, store_ids, groups, stores)
            for name, document in [
                ("items", Item),
                ("variants", Variant),
                ("prices", Price),
                ("summaries", Summary),
            ]:
                if batch[name]:
                    document.coll().insert_many(batch[name], ordered=False)
            totals["online"] += _open_online(online_rng, batch["variants"])
            store_stocks_open(
                counts=batch["stock"],
                items={v["_id"]: v["item_id"] for v in batch["variants"]},
            )
            tally.add(batch["summaries"])
            for name in ("variants", "prices", "stock"):
                totals[name] += len(batch[name])
            progress.advance(len(batch["items"]))
    scopes_write(tally)
    out.write(
        f"catalog: {items} items, {totals['variants']} variants, "
        f"{totals['prices']} prices, {len(stores)} stores, "
        f"{totals['stock']} store stock locations, "
        f"{totals['online']} SKUs opened online in "
        f"{time.monotonic() - started:.1f}s\n"
    )
