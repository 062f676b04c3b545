"""Tax id formats: the provider's tax id types this platform accepts, each checked with python-stdnum for its
country before anything is sent (a wrong one is 400 naming the rule it broke: format, length, checksum or
component)."""
import importlib
from dataclasses import dataclass

from config.errors import ValidationFailed


@dataclass(frozen=True)
class TaxIdType:
    country: str | None  # None: the value's own prefix says (EU VAT numbers)
    module: str  # the python-stdnum module that knows the format
    name: str


TYPES = {
    "eu_vat": TaxIdType(None, "stdnum.eu.vat", "EU VAT number, with its country prefix (DE123456789)"),
    "gb_vat": TaxIdType("GB", "stdnum.gb.vat", "UK VAT number (GB123456789)"),
    "ch_vat": TaxIdType("CH", "stdnum.ch.vat", "Swiss VAT number (CHE-123.456.789 MWST)"),
    "no_vat": TaxIdType("NO", "stdnum.no.mva", "Norwegian VAT number (123456789MVA)"),
    "us_ein": TaxIdType("US", "stdnum.us.ein", "US Employer Identification Number (12-3456789)"),
    "ca_bn": TaxIdType("CA", "stdnum.ca.bn", "Canadian Business Number (123456789)"),
    "au_abn": TaxIdType("AU", "stdnum.au.abn", "Australian Business Number (12345678912)"),
    "nz_gst": TaxIdType("NZ", "stdnum.nz.ird", "New Zealand GST number (123456789)"),
    "in_gst": TaxIdType("IN", "stdnum.in_.gstin", "Indian GSTIN (12ABCDE3456FGZH)"),
    "br_cnpj": TaxIdType("BR", "stdnum.br.cnpj", "Brazilian CNPJ (01.234.456/5432-10)"),
}
RULES = (("InvalidChecksum", "checksum"), ("InvalidLength", "length"), ("InvalidFormat", "format"),
         ("InvalidComponent", "component"))  # python-stdnum's exceptions, by class name
EU_PREFIX_COUNTRY = {"EL": "GR", "XI": "GB"}  # VAT prefixes that are not the ISO country code


def tax_id_check(*, type: str, value: str) -> tuple[str, str]:
    """(the value as the provider wants it, its country); 400 naming the field and the rule otherwise."""
    spec = TYPES.get(type)
    if spec is None:
        raise ValidationFailed(f"type must be one of {', '.join(TYPES)}.",
                               details={"type": [f"One of {', '.join(TYPES)}."]})
    # python-stdnum loads here, not in every web worker (about 9 MiB with the pydoc it imports)
    from stdnum import exceptions

    module = importlib.import_module(spec.module)
    try:
        clean = module.validate(value)
    except exceptions.ValidationError as exc:
        rule = next((name for cls, name in RULES if isinstance(exc, getattr(exceptions, cls))), "format")
        where = f"{type} ({spec.name})"
        raise ValidationFailed(f"value is not a valid {where}: {exc.message} (rule: {rule}, {spec.module}).",
                               details={"value": [f"{exc.message} Rule: {rule}."], "rule": rule, "type": type})
    if spec.country is None:
        prefix = clean[:2].upper()
        return clean.upper(), EU_PREFIX_COUNTRY.get(prefix, prefix)
    return str(clean), spec.country
