"""Localized code messages. Each names the expiry, as users of every peer expect."""
import re

MESSAGES = {
    "en": "Your verification code is {code}. It expires in {minutes} minutes. Do not share it.",
    "de": "Ihr Bestätigungscode lautet {code}. Er läuft in {minutes} Minuten ab. Geben Sie ihn nicht weiter.",
    "fr": "Votre code de vérification est {code}. Il expire dans {minutes} minutes. Ne le partagez pas.",
    "es": "Tu código de verificación es {code}. Caduca en {minutes} minutos. No lo compartas.",
    "pt": "O seu código de verificação é {code}. Expira em {minutes} minutos. Não o partilhe.",
    "it": "Il tuo codice di verifica è {code}. Scade tra {minutes} minuti. Non condividerlo.",
    "nl": "Je verificatiecode is {code}. Deze verloopt over {minutes} minuten. Deel hem niet.",
}
SUBJECTS = {
    "en": "Your verification code", "de": "Ihr Bestätigungscode", "fr": "Votre code de vérification",
    "es": "Tu código de verificación", "pt": "O seu código de verificação", "it": "Il tuo codice di verifica",
    "nl": "Je verificatiecode",
}
FALLBACK = "en"
LOCALES = tuple(MESSAGES)


def language(locale: str) -> str:
    """`pt-BR` → `pt`; unknown → the fallback."""
    lang = (locale or FALLBACK).split("-")[0].split("_")[0].lower()
    return lang if lang in MESSAGES else FALLBACK


# A BCP 47 language tag (RFC 5646 §2.1, without the grandfathered forms), `_` accepted for `-` as many clients
# send it: language, script, region, variants, extensions, private use.
TAG_MAX = 35
_SEP = "[-_]"
TAG = re.compile(rf"""^[A-Za-z]{{2,3}}
    (?:{_SEP}[A-Za-z]{{4}})?
    (?:{_SEP}(?:[A-Za-z]{{2}}|[0-9]{{3}}))?
    (?:{_SEP}(?:[A-Za-z0-9]{{5,8}}|[0-9][A-Za-z0-9]{{3}}))*
    (?:{_SEP}[0-9A-WYZa-wyz](?:{_SEP}[A-Za-z0-9]{{2,8}})+)*
    (?:{_SEP}[Xx](?:{_SEP}[A-Za-z0-9]{{1,8}})+)?$""", re.VERBOSE)


def is_known(locale: str) -> bool:
    """A well-formed tag of a language we have messages in."""
    return len(locale or "") <= TAG_MAX and bool(TAG.match(locale or "")) and \
        locale.split("-")[0].split("_")[0].lower() in MESSAGES


def render(locale: str, code: str, minutes: int) -> str:
    return MESSAGES[language(locale)].format(code=code, minutes=minutes)


def subject(locale: str) -> str:
    return SUBJECTS[language(locale)]
