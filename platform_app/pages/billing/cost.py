"""The workspace's Cost page: this period by category and by project (bars drawn server-side as SVG), the
forecast and the last period, and the recommendations. Every member reads it (`read`), as the API."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from platform_app.pages.base import workspace_context
from platform_app.services.billing import meters
from platform_app.services.billing.recommendations import recommendations_list, savings_total
from platform_app.services.billing.selectors import cost_overview, cost_per_project

CHART_WIDTH, LABEL_WIDTH, VALUE_WIDTH = 640, 170, 110  # label | bar | amount
BAR_HEIGHT, BAR_GAP = 22, 8


def bars(rows: list[dict], currency: str) -> dict:
    """Geometry of labelled horizontal bars for an inline <svg> (no script): one per row of `{"label",
    "amount"}`, the longest for the largest amount."""
    peak = max([r["amount"] for r in rows] + [1])
    room = CHART_WIDTH - LABEL_WIDTH - VALUE_WIDTH
    out = []
    for i, row in enumerate(rows):
        width = max(1 if row["amount"] else 0, round(room * row["amount"] / peak))
        y = i * (BAR_HEIGHT + BAR_GAP)
        out.append({**row, "y": y, "text_y": y + BAR_HEIGHT * 0.7, "height": BAR_HEIGHT, "x": LABEL_WIDTH,
                    "width": width, "value_x": LABEL_WIDTH + width + 6, "money": meters.money(row["amount"], currency),
                    "short": row["label"] if len(row["label"]) <= 24 else row["label"][:23] + "…"})
    return {"bars": out, "width": CHART_WIDTH, "height": max(1, len(rows) * (BAR_HEIGHT + BAR_GAP) - BAR_GAP)}


@login_required
def cost_page(request, org_id):
    context = workspace_context(request, org_id)
    workspace = context["workspace"]
    previous = request.GET.get("period") == "previous"
    overview = cost_overview(workspace=workspace)
    currency = overview["currency"]
    period_cost, projects = cost_per_project(workspace=workspace, previous=previous)
    categories = [{"key": c, "label": meters.CATEGORY_UNITS[c][0], "unit": meters.CATEGORY_UNITS[c][1],
                   "quantity": overview["quantities"][c], "amount": overview["by_category"][c],
                   "money": meters.money(overview["by_category"][c], currency),
                   "previous": meters.money(overview["previous_by_category"][c], currency)}
                  for c in meters.CATEGORIES]
    recommendations = recommendations_list(workspace=workspace)
    for r in recommendations:
        r.money = meters.money(r.saving_monthly, r.currency)
    context.update(
        tab="cost", overview=overview, categories=categories, previous=previous,
        total=meters.money(overview["total"], currency), forecast=meters.money(overview["forecast"], currency),
        previous_total=meters.money(overview["previous_total"], currency),
        category_chart=bars([{"label": c["label"], "amount": c["amount"]} for c in categories], currency),
        project_chart=bars([{"label": p["project_name"] or p["project_id"], "amount": p["total"]}
                            for p in projects[:20]], currency),
        projects=[{**p, "money": meters.money(p["total"], currency),
                   "amounts": [meters.money(p["by_category"][c], currency) for c in meters.CATEGORIES]}
                  for p in projects],
        period=period_cost, recommendations=recommendations,
        savings=meters.money(savings_total(recommendations), currency))
    return render(request, "platform_app/billing/cost.html", context)
