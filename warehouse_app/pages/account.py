"""Warehouse pages of a signed-in account: rate requests, shortlist, the customer's space (quotes, bookings,
stock, capacity) and the operator's inbox. The same services and rules as the warehouse API; the session
is Django's (the dashboard's), the account the same.

A request made before signing in is not lost: the quote form sends an anonymous visitor to the sign-in page
with `next` = the quote page carrying the filled fields, which shows them again to confirm."""
from functools import wraps
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth import login
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from config import ratelimit
from config.errors import ApplicationError, Forbidden, ValidationFailed
from config.redirects import safe_next
from platform_app.services.identity.auth import user_authenticate, user_sign_up
from platform_app.services.identity.mfa import sign_in_second_factor
from warehouse_app.pages.forms import (AnswerForm, BookForm, CancelForm, DeclineForm, MovementForm, QuoteForm, SignInForm,
                                      SignUpForm)
from warehouse_app.services import bookings, quotes, selectors, workspace
from warehouse_app.services.naming import facility_display_name

ACCOUNT_URL = "warehouses-account"


def _sign_in_url(next_url: str) -> str:
    return f"{reverse(ACCOUNT_URL)}?{urlencode({'next': next_url})}"


def signed_in(view):
    """Anonymous visitors go to the warehouse sign-in page, coming back here afterwards."""
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect(_sign_in_url(request.get_full_path()))
        return view(request, *args, **kwargs)
    return wrapper


def operator(view):
    """The operator's pages: 403 for other accounts, as the API's `operator_required`."""
    @wraps(view)
    @signed_in
    def wrapper(request, *args, **kwargs):
        if not selectors.is_operator(request.user):
            raise Forbidden("This needs the operator or owner role.")
        return view(request, *args, **kwargs)
    return wrapper


# Sign in / sign up ------------------------------------------------------------------

def account(request):
    """Sign in, or create an account, then go on to `next`."""
    next_url = safe_next(request, reverse("warehouses-my"))
    if request.method == "GET" and request.user.is_authenticated:
        return redirect(next_url)  # signed in meanwhile (another tab): straight on
    sign_in_form, sign_up_form = SignInForm(prefix="in"), SignUpForm(prefix="up")
    status = 200
    if request.method == "POST":
        ip = ratelimit.client_ip(request)
        try:
            if request.POST.get("action") == "sign-up":
                sign_up_form = SignUpForm(request.POST, prefix="up")
                if not sign_up_form.is_valid():
                    raise _FormInvalid()
                user = user_sign_up(**sign_up_form.cleaned_data)
            else:
                sign_in_form = SignInForm(request.POST, prefix="in")
                if not sign_in_form.is_valid():
                    raise _FormInvalid()
                data = sign_in_form.cleaned_data
                user = user_authenticate(email=data["email"], password=data["password"], ip=ip)
                sign_in_second_factor(user=user, totp_code=data["totp_code"], ip=ip)
        except _FormInvalid:
            status = 400
        except ApplicationError as exc:
            form = sign_up_form if request.POST.get("action") == "sign-up" else sign_in_form
            form.add_error(None, exc.message)
            status = exc.status
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            return redirect(next_url)
    return render(request, "warehouse_app/account.html", {
        "sign_in_form": sign_in_form, "sign_up_form": sign_up_form, "next": next_url,
        "pending_quote": "/quote?" in next_url, "section": "account",
    }, status=status)


class _FormInvalid(Exception):
    pass


# Rate requests and shortlist ---------------------------------------------------------

def quote_request(request, slug):
    """GET: the form, filled from the query (what a visitor sent before signing in). POST: send it."""
    facility = selectors.facility_by_slug(slug=slug)
    if request.method == "POST":
        form = QuoteForm(request.POST)
        status = 400
        if form.is_valid():
            if not request.user.is_authenticated:
                filled = {k: request.POST.get(k, "") for k in QuoteForm.FIELDS}
                return redirect(_sign_in_url(f"{reverse('warehouses-quote', args=[slug])}?{urlencode(filled)}"))
            try:
                quote = quotes.quote_request(customer=request.user, facility_slug=slug, **form.cleaned_data)
            except ApplicationError as exc:
                form.add_error(None, exc.message)
                status = exc.status
            else:
                messages.success(request, f"Quote {quote.reference} requested from {facility_display_name(facility)}.")
                return redirect("warehouses-my")
    else:
        status = 200
        form = QuoteForm(initial={k: v for k, v in request.GET.items() if k in QuoteForm.FIELDS})
    return render(request, "warehouse_app/quote.html", {"f": facility, "quote_form": form}, status=status)


@require_POST
def shortlist(request, slug):
    """Save (or with `remove`, drop) a facility on the shortlist."""
    facility = selectors.facility_by_slug(slug=slug)
    back = reverse("warehouses-facility", args=[slug])
    if not request.user.is_authenticated:
        return redirect(_sign_in_url(back))
    if request.POST.get("remove"):
        workspace.shortlist_remove(user=request.user, facility_slug=slug)
        messages.success(request, f"{facility_display_name(facility)} removed from your shortlist.")
    else:
        workspace.shortlist_save(user=request.user, facility_slug=slug, note=None)
        messages.success(request, f"{facility_display_name(facility)} is on your shortlist.")
    return redirect(safe_next(request, back))


# The customer's space ---------------------------------------------------------------

@signed_in
def my_space(request):
    user = request.user
    return render(request, "warehouse_app/my.html", {
        "quotes": selectors.customer_quotes(user=user), "bookings": selectors.customer_bookings(user=user),
        "inventory": bookings.inventory(user=user), "capacity": bookings.capacity(user=user),
        "movements": selectors.customer_movements(user=user), "shortlist": selectors.shortlist_of(user=user),
        "is_operator": selectors.is_operator(user), "section": "my",
    })


@signed_in
@require_POST
def quote_book(request, reference):
    form = BookForm(request.POST)
    if not form.is_valid():
        raise ValidationFailed(f"quantity: {' '.join(form.errors['quantity'])}")
    booking = bookings.booking_create(customer=request.user, quote_reference=reference,
                                      quantity=form.cleaned_data["quantity"])
    messages.success(request, f"Booked: {booking.reference}. Record stock against it below.")
    return redirect("warehouses-booking", reference=booking.reference)


def _booking_page(request, reference, *, form=None, cancel_form=None, status=200):
    booking = bookings.booking_get(user=request.user, reference=reference, own=True)
    return render(request, "warehouse_app/booking.html", {
        "b": booking, "on_hand": bookings.on_hand(booking), "movements": selectors.booking_movements(booking=booking),
        "form": form or MovementForm(), "cancel_form": cancel_form or CancelForm(prefix="cancel"),
        "live": booking.status in bookings.LIVE, "section": "my",
    }, status=status)


@signed_in
def booking(request, reference):
    return _booking_page(request, reference)


@signed_in
@require_POST
def movement_record(request, reference):
    form = MovementForm(request.POST)
    if not form.is_valid():
        return _booking_page(request, reference, form=form, status=400)
    try:
        movement = bookings.movement_record(user=request.user, booking_reference=reference, **form.cleaned_data)
    except ApplicationError as exc:
        if exc.status == 404:
            raise
        form.add_error(None, exc.message)
        return _booking_page(request, reference, form=form, status=exc.status)
    messages.success(request, f"{movement.kind.capitalize()} of {movement.quantity} recorded.")
    return redirect("warehouses-booking", reference=reference)


@signed_in
@require_POST
def booking_cancel(request, reference):
    form = CancelForm(request.POST, prefix="cancel")
    if not form.is_valid():
        return _booking_page(request, reference, cancel_form=form, status=400)
    try:
        booking = bookings.booking_cancel(customer=request.user, reference=reference, **form.cleaned_data)
    except ApplicationError as exc:
        if exc.status == 404:
            raise
        form.add_error(None, exc.message)
        return _booking_page(request, reference, cancel_form=form, status=exc.status)
    messages.success(request, f"Booking {booking.reference} cancelled.")
    return redirect("warehouses-booking", reference=reference)


# The operator's inbox ----------------------------------------------------------------

def _inbox_page(request, *, failed=None, status=200):
    """`failed`: (reference, answer form, decline form) of a refused answer, shown again with its errors."""
    inbox = selectors.operator_inbox(user=request.user)
    rows, error = [], None
    for quote in inbox["pending"]:
        if failed and failed[0] == quote.reference:
            rows.append((quote, failed[1], failed[2]))
        else:
            rows.append((quote, AnswerForm(prefix=quote.reference, initial={"unit": quote.unit}),
                         DeclineForm(prefix=quote.reference)))
    if failed and failed[0] not in {quote.reference for quote in inbox["pending"]}:  # no longer pending
        error = f"{failed[0]}: " + " ".join(failed[1].non_field_errors() + failed[2].non_field_errors())
    return render(request, "warehouse_app/inbox.html", {"rows": rows, "done": inbox["done"], "error": error,
                                                        "section": "my"}, status=status)


@operator
def inbox(request):
    return _inbox_page(request)


@operator
@require_POST
def quote_answer(request, reference):
    form = AnswerForm(request.POST, prefix=reference)
    if form.is_valid():
        try:
            quote = quotes.quote_answer(user=request.user, reference=reference, **form.cleaned_data)
        except ApplicationError as exc:
            if exc.status == 404:
                raise
            form.add_error(None, exc.message)
            return _inbox_page(request, failed=(reference, form, DeclineForm(prefix=reference)), status=exc.status)
        messages.success(request, f"Quote {quote.reference} answered.")
        return redirect("warehouses-inbox")
    return _inbox_page(request, failed=(reference, form, DeclineForm(prefix=reference)), status=400)


@operator
@require_POST
def quote_decline(request, reference):
    form = DeclineForm(request.POST, prefix=reference)
    if form.is_valid():
        try:
            quote = quotes.quote_decline(user=request.user, reference=reference, **form.cleaned_data)
        except ApplicationError as exc:
            if exc.status == 404:
                raise
            form.add_error(None, exc.message)
            return _inbox_page(request, failed=(reference, AnswerForm(prefix=reference), form), status=exc.status)
        messages.success(request, f"Quote {quote.reference} declined.")
        return redirect("warehouses-inbox")
    return _inbox_page(request, failed=(reference, AnswerForm(prefix=reference), form), status=400)
