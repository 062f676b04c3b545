"""Forms of the warehouse pages: the same bounds as the API's input serializers (warehouse_app/api/commerce.py)."""
from django import forms

from warehouse_app.models import Movement, Quote

DATE = forms.DateInput(attrs={"type": "date"})


class QuoteForm(forms.Form):
    quantity = forms.IntegerField(min_value=1, max_value=1_000_000)
    unit = forms.ChoiceField(choices=Quote.Unit.choices, initial=Quote.Unit.PALLET)
    start_date = forms.DateField(widget=DATE)
    term_months = forms.IntegerField(min_value=1, max_value=120, initial=12, label="Term (months)")
    notes = forms.CharField(max_length=2000, required=False, widget=forms.Textarea(attrs={"rows": 3}))

    FIELDS = ("quantity", "unit", "start_date", "term_months", "notes")


class AnswerForm(forms.Form):
    price = forms.IntegerField(min_value=1, max_value=2_000_000_000,
                               help_text="per unit per month, in minor units (cents)")
    currency = forms.RegexField(r"^[A-Za-z]{3}$", max_length=3, initial="USD",
                                error_messages={"invalid": "Use a three-letter currency code (USD)."})
    unit = forms.ChoiceField(choices=Quote.Unit.choices)
    valid_until = forms.DateField(widget=DATE)


class BookForm(forms.Form):
    """Booking a quote: a quantity only when the quote is priced in another unit than requested."""
    quantity = forms.IntegerField(min_value=1, max_value=1_000_000, required=False)


class DeclineForm(forms.Form):
    reason = forms.CharField(max_length=2000)


class CancelForm(forms.Form):
    reason = forms.CharField(max_length=2000, label="Reason for cancelling")


class MovementForm(forms.Form):
    kind = forms.ChoiceField(choices=Movement.Kind.choices)
    quantity = forms.IntegerField(min_value=1, max_value=1_000_000)
    sku = forms.CharField(max_length=64, required=False, label="SKU")
    note = forms.CharField(max_length=500, required=False)


class SignInForm(forms.Form):
    email = forms.EmailField(max_length=254)
    password = forms.CharField(max_length=256, strip=False, widget=forms.PasswordInput)
    totp_code = forms.CharField(required=False, max_length=8, label="TOTP code (if enabled)")


class SignUpForm(forms.Form):
    name = forms.CharField(max_length=150, required=False)
    email = forms.EmailField(max_length=254)
    password = forms.CharField(max_length=256, strip=False, widget=forms.PasswordInput,
                               help_text="At least 10 characters; not a common password.")
