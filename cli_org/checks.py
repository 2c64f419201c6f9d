"""Write-time checks: what a fact must be, and what it must never carry."""

from __future__ import annotations

import re
import unicodedata

from .errors import InputError

MAX_CLAIM = 1000
MAX_SUBJECT = 200

_SOURCE_FORMS = [
    ("url", re.compile(r"^https?://[A-Za-z0-9.-]+(:\d+)?(/\S*)?$")),
    ("message", re.compile(r"^#[A-Za-z0-9][\w.-]*$")),
    ("card", re.compile(r"^t_[A-Za-z0-9][\w-]*$")),
    # A path has a folder or an extension; an optional :line or :start-end follows.
    ("path", re.compile(r"^(~|\.{1,2})?/?([\w@+.-]+/)*[\w@+-][\w@+.-]*(\.[A-Za-z0-9]+|/)(:\d+(-\d+)?)?$")),
    ("path", re.compile(r"^(~|\.{1,2})?/?([\w@+.-]+/)+[\w@+.-]+(:\d+(-\d+)?)?$")),
]

_SECRETS = [
    ("a private key block", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")),
    ("an AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("an API key", re.compile(r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{20,}")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a Stripe key", re.compile(r"\b[rsp]k_(?:live|test)_[0-9A-Za-z]{16,}")),
    ("a JSON web token", re.compile(r"\beyJ[\w-]{10,}\.eyJ[\w-]{10,}\.[\w-]{10,}")),
    ("a bearer token", re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{20,}")),
    ("a connection string with a password", re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:[^\s/@]+@")),
    (
        "a secret assignment",
        re.compile(
            r"\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?key|auth[_-]?token|token)"
            r"\s*[:=]\s*['\"]?(?![$<{*%])[^\s'\"]{4,}",
            re.IGNORECASE,
        ),
    ),
]

_INJECTION = [
    re.compile(
        r"\b(?:ignore|disregard|forget|override|bypass)\b\W+(?:\w+\W+){0,3}?"
        r"(?:previous|prior|above|earlier|preceding|all|any|your|system)\b\W+(?:\w+\W+){0,2}?"
        r"(?:instructions?|prompts?|directions?|rules|guidelines|directives?)\b",
        re.IGNORECASE,
    ),
    re.compile(r"\byou are now\b.{0,40}\b(?:unrestricted|jailbroken|DAN|developer mode|no longer bound)", re.I),
    re.compile(r"\b(?:reveal|print|repeat|leak)\b.{0,20}\b(?:system prompt|hidden instructions)\b", re.I),
    re.compile(r"<\|?(?:im_start|im_end|system)\|?>|\[/?INST\]", re.I),
]

_PROJECT = re.compile(r"^[A-Za-z0-9][\w.-]{0,63}$")
_VIA = re.compile(r"^[\w.-]{1,64}@[\w.-]{1,128}$")


def invisible_chars(text: str) -> list[str]:
    """Format (Cf) characters: zero-width, bidi controls, tag characters and the like."""
    return [f"U+{ord(ch):04X}" for ch in text if unicodedata.category(ch) == "Cf"]


def source_form(source: str) -> str | None:
    for form, pattern in _SOURCE_FORMS:
        if pattern.match(source):
            return form
    return None


def check_text(field: str, text: str) -> None:
    """Refuse invisible characters, secrets and prompt-injection phrases in a field."""
    bad = invisible_chars(text)
    if bad:
        raise InputError(f"{field} contains invisible or bidi-control characters ({', '.join(sorted(set(bad)))})")
    for what, pattern in _SECRETS:
        if pattern.search(text):
            raise InputError(f"{field} looks like it contains {what}; facts are readable by every agent")
    for pattern in _INJECTION:
        if pattern.search(text):
            raise InputError(f"{field} contains a prompt-injection phrase; state the fact plainly")


def check_fact(
    subject: str, claim: str, source: str | None, project: str | None = None, via: str | None = None
) -> tuple[str, str, str]:
    """Validate a new fact; returns subject, claim and source stripped of outer space."""
    subject, claim, source = subject.strip(), claim.strip(), (source or "").strip()
    if not subject:
        raise InputError("subject is empty")
    if not claim:
        raise InputError("claim is empty")
    if len(subject) > MAX_SUBJECT:
        raise InputError(f"subject is {len(subject)} characters; the limit is {MAX_SUBJECT}")
    if len(claim) > MAX_CLAIM:
        raise InputError(f"claim is {len(claim)} characters; the limit is {MAX_CLAIM}: state one fact")
    if not source:
        raise InputError("--source is required: a path, #message, t_card or URL")
    if source_form(source) is None:
        raise InputError(f"source {source!r} is not a path, #message, t_card id or http(s) URL")
    if project is not None and not _PROJECT.match(project):
        raise InputError(f"project {project!r} must be letters, digits, '.', '_' or '-'")
    if via is not None and not _VIA.match(via):
        raise InputError(f"via {via!r} must look like runtime@host")
    for field, text in (("subject", subject), ("claim", claim), ("source", source)):
        check_text(field, text)
    return subject, claim, source
