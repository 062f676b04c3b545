"""Server-rendered SVG geometry for the console's charts (no JavaScript)."""
from dataclasses import dataclass, field

PALETTE = {"whatsapp": "#1f9d55", "sms": "#2b6cb0", "email": "#b7791f", "console": "#718096"}
OTHER = "#805ad5"


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    color: str
    title: str


@dataclass
class Chart:
    width: int
    height: int
    bars: list = field(default_factory=list)
    labels: list = field(default_factory=list)  # (x, text) under the bars
    ticks: list = field(default_factory=list)  # (y, value) on the left axis
    legend: list = field(default_factory=list)  # (channel, color, total)
    plot_top: int = 10
    plot_bottom: int = 0
    plot_left: int = 36


def stacked_days(usage, *, width: int = 640, height: int = 220) -> Chart:
    """One stacked bar per day, a segment per channel (`usage`: services.console.DailyUsage)."""
    left, top, bottom = 36, 10, height - 28
    chart = Chart(width=width, height=height, plot_bottom=bottom, plot_left=left, plot_top=top)
    totals = [sum(usage.counts.get((day, c), 0) for c in usage.channels) for day in usage.days]
    peak = max(totals + [1])
    step = (width - left - 8) / max(len(usage.days), 1)
    scale = (bottom - top) / peak
    for i, day in enumerate(usage.days):
        x = left + i * step + step * 0.15
        y = bottom
        for channel in usage.channels:
            n = usage.counts.get((day, channel), 0)
            if not n:
                continue
            h = n * scale
            y -= h
            chart.bars.append(Bar(round(x, 1), round(y, 1), round(step * 0.7, 1), round(h, 1),
                                  PALETTE.get(channel, OTHER), f"{day:%b %d}: {n} via {channel}"))
        if i % max(1, len(usage.days) // 7) == 0:
            chart.labels.append((round(x + step * 0.35, 1), f"{day:%b %d}"))
    for value in sorted({0, peak // 2, peak}):
        chart.ticks.append((round(bottom - value * scale, 1), value))
    chart.legend = [(c, PALETTE.get(c, OTHER), sum(usage.counts.get((d, c), 0) for d in usage.days))
                    for c in usage.channels]
    return chart
