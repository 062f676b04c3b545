"""Building outlines as SVG, projected from lon/lat into the viewBox (no tile server, no JavaScript).

An equirectangular projection with the longitude scaled by cos(mean latitude): at the size of a building or
a region it keeps shapes and relative sizes, and north stays up."""
import math
from dataclasses import dataclass


def _rings(outline: dict) -> list:
    polygons = (outline or {}).get("coordinates", [])
    if (outline or {}).get("type") == "Polygon":
        polygons = [polygons]
    return [ring for poly in polygons for ring in poly if ring]


@dataclass
class Projection:
    kx: float
    min_x: float
    max_y: float
    scale: float
    pad: float

    def xy(self, point) -> str:
        return (f"{(point[0] * self.kx - self.min_x) * self.scale + self.pad:.1f},"
                f"{(self.max_y - point[1]) * self.scale + self.pad:.1f}")

    def path(self, outline: dict) -> str:
        return " ".join("M" + " L".join(_distinct(self.xy(p) for p in ring)) + " Z" for ring in _rings(outline))


def _distinct(points):
    """The points of a ring without those drawn where the one before was (a detail smaller than the map's
    resolution: a large region's map would otherwise carry every corner of every building)."""
    last = None
    for point in points:
        if point != last:
            yield point
        last = point


def fit(points: list, size: int, pad: int) -> tuple[Projection, int, int]:
    """The projection that fits `points` (lon, lat) into a `size` box; and the box's width and height."""
    lat0 = sum(p[1] for p in points) / len(points)
    kx = math.cos(math.radians(lat0))
    xs, ys = [p[0] * kx for p in points], [p[1] for p in points]
    span = max(max(xs) - min(xs), max(ys) - min(ys)) or 1e-9
    scale = (size - 2 * pad) / span
    width = round((max(xs) - min(xs)) * scale + 2 * pad)
    height = round((max(ys) - min(ys)) * scale + 2 * pad)
    return Projection(kx, min(xs), max(ys), scale, pad), width, height


def outline_svg_path(outline: dict, size: int = 320, pad: int = 10) -> tuple[str, int, int]:
    """One building: (SVG path, width, height)."""
    points = [p for ring in _rings(outline) for p in ring]
    if not points:
        return "", size, size
    projection, width, height = fit(points, size, pad)
    return projection.path(outline), width, height


@dataclass
class Shape:
    facility: object
    d: str


def region_map(facilities: list, size: int = 800, pad: int = 12) -> dict:
    """All outlines of a region in one viewBox: {"shapes": [Shape], "width", "height"}."""
    points = [p for f in facilities for ring in _rings(f.outline) for p in ring]
    if not points:
        return {"shapes": [], "width": size, "height": size}
    projection, width, height = fit(points, size, pad)
    shapes = [Shape(f, projection.path(f.outline)) for f in facilities if _rings(f.outline)]
    return {"shapes": shapes, "width": width, "height": height}
