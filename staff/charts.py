"""Bar charts drawn on the server as accessible SVG (no JavaScript, no CDN).

Each chart has role="img", a <title> and a <desc> (named by aria-labelledby),
and each bar its own <title> (a tooltip); the page shows the same figures in
a table beside it, as pretix's statistics do.
"""

from dataclasses import dataclass

from django.utils.html import escape, format_html
from django.utils.safestring import mark_safe

WIDTH = 480
HEIGHT = 270
PAD_LEFT = 78
PAD_BOTTOM = 34
PAD_TOP = 14
FONT = 15  # px of the viewBox: readable once the chart is scaled to a column
COLOURS = ("#7a1f3d", "#1f5f7a", "#b26a00")


@dataclass(frozen=True)
class Series:
    name: str
    values: list[float]


@dataclass(frozen=True)
class Chart:
    id: str
    title: str
    description: str
    labels: list[str]
    series: list[Series]
    unit: str = ""  # "£" for money
    axis: str = "Day"  # what a label is: the data table's first heading

    def fmt(self, value: float) -> str:
        if self.unit == "£":
            return f"£{value:,.2f}"
        if value != int(value):
            return f"{value:,.1f}"
        return f"{value:,.0f}"

    @property
    def rows(self):
        """The data table: one row per label, one cell per series."""
        return [
            (label, [self.fmt(s.values[i]) for s in self.series])
            for i, label in enumerate(self.labels)
        ]

    @property
    def table(self) -> str:
        """The chart's figures as an HTML table (drawn here, not by a template
        loop: 30 rows of several cells cost the dashboard ~30 ms in templates)."""
        head = self.axis
        cells = "".join(
            f'<th scope="col" class="money">{escape(s.name)}</th>' for s in self.series
        )
        rows = "".join(
            f'<tr><th scope="row">{escape(label)}</th>'
            + "".join(f'<td class="money">{escape(v)}</td>' for v in values)
            + "</tr>"
            for label, values in self.rows
        )
        return mark_safe(
            f'<table class="data"><caption class="visually-hidden">'
            f"{escape(self.title)}</caption><thead><tr>"
            f'<th scope="col">{head}</th>{cells}</tr></thead>'
            f"<tbody>{rows}</tbody></table>"
        )

    @property
    def legend(self):
        """(name, colour) per series, for charts of more than one."""
        if len(self.series) < 2:
            return []
        return [(s.name, COLOURS[i % len(COLOURS)]) for i, s in enumerate(self.series)]

    @property
    def svg(self) -> str:
        return mark_safe(_draw(self))


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1
    step = 10 ** (len(str(int(value))) - 1)
    return ((int(value) // step) + 1) * step


def _scale_top(chart: Chart) -> float:
    top = _nice_max(max((max(s.values, default=0) for s in chart.series), default=0))
    if chart.unit != "£":  # counts: whole numbers on every grid line
        top = max(4, -(-int(top) // 4) * 4)
    return top


def _svg_open(chart: Chart) -> str:
    return format_html(
        '<svg class="chart" viewBox="0 0 {} {}" role="img" '
        'aria-labelledby="{}-title" aria-describedby="{}-desc" '
        'preserveAspectRatio="none">'
        '<title id="{}-title">{}</title><desc id="{}-desc">{}</desc>',
        WIDTH,
        HEIGHT,
        chart.id,
        chart.id,
        chart.id,
        chart.title,
        chart.id,
        chart.description,
    )


def _grid(chart: Chart, top: float, plot_h: float) -> list[str]:
    """Five grid lines and their values."""
    parts = []
    for k in range(5):
        y = PAD_TOP + plot_h * k / 4
        value = top * (4 - k) / 4
        parts.append(
            f'<line x1="{PAD_LEFT}" x2="{WIDTH - 8}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="#e4e0ea"/><text x="{PAD_LEFT - 6}" y="{y + 4:.1f}" '
            f'text-anchor="end" font-size="{FONT}" fill="#57525f">'
            f"{escape(chart.fmt(value))}</text>"
        )
    return parts


def _bars(chart: Chart, top: float, plot_h: float) -> list[str]:
    """One bar per label and series, and at most 8 labels under the axis."""
    n = max(len(chart.labels), 1)
    slot = (WIDTH - PAD_LEFT - 8) / n
    bar_w = max(slot * 0.8 / len(chart.series), 1)
    every = max(1, -(-n // 8))
    parts = []
    for i, label in enumerate(chart.labels):
        x0 = PAD_LEFT + slot * i + slot * 0.1
        for j, series in enumerate(chart.series):
            value = series.values[i]
            # A day of more refunds than sales is drawn as no bar (its
            # figure is in the title and the data table), never as a
            # negative height, which browsers do not draw at all.
            h = plot_h * max(value, 0) / top
            parts.append(
                f'<rect x="{x0 + j * bar_w:.1f}" y="{PAD_TOP + plot_h - h:.1f}" '
                f'width="{bar_w:.1f}" height="{h:.1f}" '
                f'fill="{COLOURS[j % len(COLOURS)]}"><title>'
                f"{escape(label)}: {escape(series.name)} {escape(chart.fmt(value))}"
                "</title></rect>"
            )
        if i % every == 0:
            parts.append(
                f'<text x="{PAD_LEFT + slot * (i + 0.5):.1f}" y="{HEIGHT - 10}" '
                f'text-anchor="middle" font-size="{FONT}" fill="#57525f">'
                f"{escape(label)}</text>"
            )
    return parts


def _draw(chart: Chart) -> str:
    top = _scale_top(chart)
    plot_h = HEIGHT - PAD_TOP - PAD_BOTTOM
    parts = [_svg_open(chart), *_grid(chart, top, plot_h), *_bars(chart, top, plot_h)]
    return "".join(str(p) for p in parts) + "</svg>"
