"""Routes of the billing area (mounted under /v1/), one module per feature listed here: cost reports (cost.py),
billing with the payments provider (billing.py), its webhook (webhooks.py); staff reports of billing are the staff area's (api/staff/admin.py)."""
from django.urls import path

from platform_app.api.billing import billing, cost, webhooks

O = "orgs/<str:org_id>"

urlpatterns = [
    # Cost
    path(f"{O}/cost/overview", cost.CostOverviewView.as_view()),
    path(f"{O}/cost/per-project", cost.CostPerProjectView.as_view()),
    path(f"{O}/cost/recommendations", cost.CostRecommendationsView.as_view()),
    # Billing
    path(f"{O}/billing", billing.BillingView.as_view()),
    path(f"{O}/billing/usage-cap", billing.UsageCapView.as_view()),
    path(f"{O}/billing/payment-methods", billing.PaymentMethodListView.as_view()),
    path(f"{O}/billing/payment-methods/setup-intent", billing.SetupIntentView.as_view()),
    path(f"{O}/billing/payment-methods/<str:pm_id>/default", billing.PaymentMethodDefaultView.as_view()),
    path(f"{O}/billing/payment-methods/<str:pm_id>", billing.PaymentMethodDetailView.as_view()),
    path(f"{O}/billing/subscription", billing.SubscriptionView.as_view()),
    path(f"{O}/billing/invoices", billing.InvoiceListView.as_view()),
    path(f"{O}/billing/invoices/<str:invoice_id>", billing.InvoiceDetailView.as_view()),
    path(f"{O}/billing/tax-ids", billing.TaxIdListView.as_view()),
    path(f"{O}/billing/tax-ids/<str:tax_id_id>", billing.TaxIdDetailView.as_view()),
    path(f"{O}/billing/address", billing.AddressView.as_view()),
    path(f"{O}/billing/email", billing.EmailView.as_view()),
    # The payments provider's webhook
    path("webhooks/payments", webhooks.PaymentsWebhookView.as_view()),
    # Staff reports
]
