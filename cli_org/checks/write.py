"""Write-time checks: what a fact must be, and what it must never carry.

The database enforces the same definition for members who write with plain SQL
(migrations/repeatable/write_checks.sql, written from this module by
scripts/write_checks_sql.py): every pattern marked `db` in patterns.py is copied there
verbatim, and the text folding is implemented twice, here and in SQL, with tests that hold
the two together. The database is never stricter than this module, so the client always
refuses first, with the friendlier message; see tests/test_write_scan.py. The client alone
also reads the text in ROT13 and decodes base64 runs, and runs the detect-secrets detectors.
"""

from __future__ import annotations

import base64
import codecs
import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from ..errors import InputError, ScanRefused
from .patterns import (  # noqa: F401 (CONFUSABLES_*, Pattern: part of this module's interface)
    CONFUSABLES,
    CONFUSABLES_FROM,
    CONFUSABLES_TO,
    INJECTION_PATTERNS,
    LOWER,
    SECRET_PATTERNS,
    Pattern,
)
from .rules import FIELD_RULES, MAX_CLAIM, MAX_SUBJECT, NOTEBOOK_CAPS

_SOURCE_FORMS = [
    ("url", re.compile(r"^https?://[A-Za-z0-9.-]+(:\d+)?(/\S*)?$")),
    ("message", re.compile(r"^#[A-Za-z0-9][\w.-]*$")),
    ("card", re.compile(r"^t_[A-Za-z0-9][\w-]*$")),
    # A path has a folder or an extension; an optional :line or :start-end follows.
    ("path", re.compile(r"^(~|\.{1,2})?/?([\w@+.-]+/)*[\w@+-][\w@+.-]*(\.[A-Za-z0-9]+|/)(:\d+(-\d+)?)?$")),
    ("path", re.compile(r"^(~|\.{1,2})?/?([\w@+.-]+/)+[\w@+.-]+(:\d+(-\d+)?)?$")),
]


# The bare 40-character secret half of a cloud key pair: base64 letters with every class
# well mixed, and not the base64 of readable text. Client only (the test is not a regex).
_BARE_40 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=])")

# Detectors from the `detect-secrets` library, used for their token shapes only. Left out:
# the keyword and high-entropy detectors (they refuse commit hashes, UUIDs and prose, and
# the assignment patterns above serve better), public IP addresses (not secrets), private keys
# (the library also flags a mention of "BEGIN RSA PRIVATE KEY"; the pattern wants the dashes)
# and Twilio (an account id alone is no secret; the patterns want it beside its token).
_LIBRARY_DETECTORS = [
    ("artifactory", "ArtifactoryDetector"),
    ("aws", "AWSKeyDetector"),
    ("azure_storage_key", "AzureStorageKeyDetector"),
    ("basic_auth", "BasicAuthDetector"),
    ("discord", "DiscordBotTokenDetector"),
    ("github_token", "GitHubTokenDetector"),
    ("gitlab_token", "GitLabTokenDetector"),
    ("jwt", "JwtTokenDetector"),
    ("mailchimp", "MailchimpDetector"),
    ("npm", "NpmDetector"),
    ("openai", "OpenAIDetector"),
    ("pypi_token", "PypiTokenDetector"),
    ("sendgrid", "SendGridDetector"),
    ("slack", "SlackDetector"),
    ("square_oauth", "SquareOAuthDetector"),
    ("stripe", "StripeDetector"),
    ("telegram_token", "TelegramBotTokenDetector"),
]


@functools.cache
def _library_detectors() -> list[Any]:
    """Imported on first use, and without the HTTP client the library imports for its
    `verify` (asking a vendor whether a key is live), which cli-org never calls: it only
    runs `analyze_string`. While the detectors load, `requests` is an empty stand-in module
    (unless the real one is already loaded), and it is taken out again after, so a later
    `import requests` gets the real one. The detectors loaded in 57 ms of CPU instead of
    170 (perf stat, 2026-12-04), a cold `remember`'s largest import after the model's."""
    import importlib
    import sys
    import types

    standin = None if "requests" in sys.modules else types.ModuleType("requests")
    if standin is not None:
        sys.modules["requests"] = standin
    try:
        found = []
        for module, name in _LIBRARY_DETECTORS:
            found.append(getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)())
        return found
    finally:
        if standin is not None and sys.modules.get("requests") is standin:
            del sys.modules["requests"]


# Format (Cf) characters, as code point ranges of Python's Unicode tables; the database
# uses the same ranges (a test compares them with unicodedata).
CF_RANGES = [
    (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F),
    (0x0890, 0x0891), (0x08E2, 0x08E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x2064), (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD),
    (0x110CD, 0x110CD), (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001), (0xE0020, 0xE007F),
]  # fmt: skip
_CF = re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in CF_RANGES) + "]")

# Verbs whose negation makes a rule, not an attack: "never ignore the system rules".
NEGATED = (
    r"(?<![a-z])(never|not|cannot|n't) (ignore|disregard|forget|override|bypass|reveal|print|show|repeat|leak"
    r"|disclose|output|dump|pretend|act|send|post|upload|share|forward|email|append|include|export|paste"
    r"|exfiltrate|transmit|embed|list|copy|write|put|store|save|role-?play|impersonate)(?![a-z])"
)
# A quoted phrase after a word that mentions it ("text that says \"ignore previous
# instructions\"", "the string 'you are now ...'", "treat '...' as an attack") is quoted, not
# said: its words are dropped before the phrase checks.
MENTIONED = (
    r"(?<![a-z])(says|saying|reads|reading|strings?|phrases?|wording|words|text|like|such as|e\.g\.|markers?"
    r"|treat|containing|contains|flags?|matches|match|quoted)( ?)(?:\"[^\"]{1,80}\"|'[^']{1,80}')"
)
# Digits that stand in for letters ("1gn0re"), undone in the second variant only.
DIGITS_FROM, DIGITS_TO = "013457@$", "oieastas"
# Single letters split by dots, stars, underscores or hyphens ("i.g.n.o.r.e"), then words
# split by a hyphen ("ign-ore"), then letters split by single spaces ("i g n o r e").
DOTTED = r"(?<![a-z])([a-z])[.*_-](?=[a-z](?![a-z]))"
HYPHENATED = r"([a-z])-(?=[a-z])"
SPACED = r"(?<![a-z])([a-z]) (?=[a-z](?![a-z]))"
_DIGITS = str.maketrans(DIGITS_FROM, DIGITS_TO)
_NEGATED, _DOTTED, _HYPHENATED, _SPACED, _MENTIONED = (
    re.compile(r) for r in (NEGATED, DOTTED, HYPHENATED, SPACED, MENTIONED)
)


def fold_variants(text: str) -> tuple[str, str]:
    """The text as the phrase checks see it, twice.

    Both: NFKC, format characters removed, look-alike letters mapped to Latin, ASCII
    lower-cased, quoted phrases that are mentioned dropped, runs of spaces squeezed, negated
    verbs marked ("never no-ignore"). The
    second also drops HTML comment markers, reads digits as letters ("1gn0re") and joins
    split words: dotted letters ("i.g.n.o.r.e"), hyphenated pieces ("ign-ore") and spaced-out
    letters ("i g n o r e").
    The database's org_write_fold() (migrations/repeatable/write_checks.sql) computes the same pair.
    """
    base = _CF.sub("", unicodedata.normalize("NFKC", text)).translate(CONFUSABLES).translate(LOWER)
    base = _MENTIONED.sub(r'\1\2""', base)
    plain = re.sub(" +", " ", base)
    joined = re.sub("<!--|-->", " ", base).translate(_DIGITS)
    joined = _SPACED.sub(r"\1", _HYPHENATED.sub(r"\1", _DOTTED.sub(r"\1", joined)))
    joined = re.sub(" +", " ", joined)
    return _NEGATED.sub(r"\1 no-\2", plain), _NEGATED.sub(r"\1 no-\2", joined)


# Base64 runs long enough to hide a sentence; decoded, they are scanned like the text.
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{20,}={0,2}")


_HEX_RUN = re.compile(r"(?<![A-Za-z0-9])(?:[0-9a-fA-F]{2}){10,}(?![A-Za-z0-9])")


def _base64_bytes(text: str) -> list[bytes]:
    found = []
    for m in _BASE64_RUN.finditer(text):
        run = m.group().rstrip("=")
        try:
            found.append(base64.urlsafe_b64decode((run.replace("+", "-").replace("/", "_")) + "=" * (-len(run) % 4)))
        except ValueError:
            continue
    return found


def _readable(raws: list[bytes]) -> list[str]:
    found = []
    for raw in raws:
        try:
            decoded = raw.decode("utf-8")
        except ValueError:
            continue
        if decoded and all(ch.isprintable() for ch in decoded):
            found.append(decoded)
    return found


def _decoded_base64(text: str) -> list[str]:
    """The readable texts that base64 runs in the text decode to."""
    return _readable(_base64_bytes(text))


def _decoded_hex(text: str) -> list[str]:
    """The readable texts that hex runs (ten bytes or more) in the text decode to."""
    return _readable([bytes.fromhex(m.group()) for m in _HEX_RUN.finditer(text)])


def control_chars(text: str) -> list[str]:
    """Control (Cc) characters and line or paragraph separators: newline, tab, ESC, BEL, NUL, DEL, C1."""
    return [f"U+{ord(ch):04X}" for ch in text if unicodedata.category(ch) in ("Cc", "Zl", "Zp")]


def invisible_chars(text: str) -> list[str]:
    """Format (Cf) characters: zero-width, bidi controls, tag characters and the like."""
    return [f"U+{ord(ch):04X}" for ch in text if unicodedata.category(ch) == "Cf"]


def source_form(source: str) -> str | None:
    for form, pattern in _SOURCE_FORMS:
        if pattern.fullmatch(source):
            return form
    return None


# What a detector found that is a placeholder, not a secret: USER:PASSWORD@HOST.
_PLACEHOLDER = re.compile(r"[A-Z_]+|password|pass|pwd|secret|x+|\.\.\.|.*(?:EXAMPLE|xxxx|XXXX|\*\*\*).*")


def _bare_cloud_secret(text: str) -> bool:
    for m in _BARE_40.finditer(text):
        token = m.group()
        upper, lower = sum(c.isupper() for c in token), sum(c.islower() for c in token)
        if upper < 8 or lower < 8 or sum(c.isdigit() for c in token) < 3:
            continue
        decoded = base64.b64decode(token + "=" * (-len(token) % 4))
        if sum(32 <= b < 127 for b in decoded) / len(decoded) < 0.9:
            return True
    return False


# A key written so that no pattern sees it whole is read again joined (client only).
# Runs of five or more short pieces split by single spaces or dashes ("A K I A 2E0A 8F3B ...",
# "AKIA-2E0A-8F3B-..."), joined from the start of each piece (at most _JOINS readings). A
# piece is one character or holds a digit, a capital or "_": a lowercase word ends the run,
# so prose ("keys start with sk_test_ and ...") is not glued into a key.
_PIECE = r"(?:[A-Za-z0-9_]|(?=[a-z]{0,11}[0-9A-Z_])[A-Za-z0-9_]{2,12})"
_PIECES = re.compile(r"(?<![^ ,:;(=\"'])(?:" + _PIECE + r"[ -]){4,}" + _PIECE + r"(?![^ .,;)\"'])")
_JOINS = 48
# ... and string literals glued by an operator: "sk_" + "live_...", 'AKIA' . '...', "a" || "b".
_GLUE = re.compile(r"['\"] *(?:\+|\.\.?|\|\|) *['\"]")


def _joined_readings(text: str) -> list[str]:
    readings = [_GLUE.sub("", text)] if _GLUE.search(text) else []
    for m in _PIECES.finditer(text):
        pieces = re.split("[ -]", m.group())
        readings += ["".join(pieces[i : i + 40]) for i in range(len(pieces) - 4)]  # 40 pieces: a long key
        if len(readings) > _JOINS:
            break
    return readings[:_JOINS]


@dataclass(frozen=True)
class Finding:
    """What a scan found: a secret or an injection, which check found it and where.

    `part` is the text that matched: for a secret, only its first characters (a refusal must
    not repeat the secret); for a phrase, the words as the phrase checks read them (folded:
    lower case, look-alikes mapped); for the classifier, the sentence it scored highest.
    `at` is the 1-based character where a secret starts in the text as scanned (after NFKC).
    """

    kind: str  # "secret" or "injection"
    what: str
    part: str | None = None
    at: int | None = None
    score: float | None = None
    threshold: float | None = None


# Characters of a secret a refusal shows (then "…"), and of an injection's words or sentence.
SHOWN_SECRET = 4
SHOWN_PHRASE = 120


def _pattern_secret(text: str) -> Finding | None:
    for pattern in SECRET_PATTERNS:
        if pattern.search(text):
            m = pattern.compiled.search(text)
            assert m is not None
            return Finding("secret", pattern.what, m.group()[:SHOWN_SECRET] + "…", m.start() + 1)
    return None


def find_secret(text: str) -> str | None:
    """What secret-like thing the text carries, as "a ..." words, or None."""
    found = secret_finding(text)
    return found.what if found else None


def secret_finding(text: str) -> Finding | None:
    """The secret-like thing the text carries, or None; also looked for with split keys
    joined and in what base64 runs decode to (client only). The text is read after NFKC, as
    the database reads it: a full-width "ｇｈｐ＿…" is the token it stands for."""
    text = unicodedata.normalize("NFKC", text)
    found = _pattern_secret(text)
    if found:
        return found
    for reading in _joined_readings(text):
        found = _pattern_secret(reading)
        if found:
            return Finding("secret", found.what + " (split up)", found.part)
    for reading in _decoded_base64(text):
        found = _pattern_secret(reading)
        if found:
            return Finding("secret", found.what + " (in base64)", found.part)
    for detector in _library_detectors():
        for value in detector.analyze_string(text):
            if not _PLACEHOLDER.fullmatch(value):
                at = text.find(value) + 1  # 0: not found as written
                what = f"a secret ({detector.secret_type})"
                return Finding("secret", what, value[:SHOWN_SECRET] + "…", at or None)
    if _bare_cloud_secret(text):
        return Finding("secret", "a bare 40-character cloud secret key")
    if any(b"PRIVATE KEY-----" in raw for raw in _base64_bytes(text)):
        return Finding("secret", "a private key block (in base64)")
    return None


def find_injection(text: str) -> str | None:
    """Which prompt-injection phrase the text carries, or None."""
    found = injection_finding(text)
    return found.what if found else None


def injection_finding(text: str) -> Finding | None:
    """The prompt-injection phrase the text carries, or None; also looked for in the
    text's ROT13, reversed, and in what its base64 and hex runs decode to, and by the
    injection classifier (client only)."""
    text = unicodedata.normalize("NFKC", text)
    readings = [("", text), (" in ROT13", codecs.encode(text, "rot13")), (" reversed", text[::-1])]
    readings += [(" in base64", decoded) for decoded in _decoded_base64(text)]
    readings += [(" in hex", decoded) for decoded in _decoded_hex(text)]
    plain = fold_variants(text)
    for how, reading in readings:
        variants = plain if not how else fold_variants(reading)
        for pattern in INJECTION_PATTERNS:
            matched = [v for v in variants if pattern.found_in(v)]
            if not matched:
                continue
            # "unless" reads the text as written, whichever reading matched
            if any(pattern.excused(v) for v in plain):
                continue
            m = pattern.compiled.search(matched[0])
            assert m is not None
            return Finding("injection", pattern.what + how, m.group()[:SHOWN_PHRASE])
    # What the patterns miss (other languages, new wordings) by its meaning, where
    # the query model is here (cli_org/checks/injection.py)
    from . import injection

    judged = injection.judge(text)
    if judged is not None:
        sentence, score, threshold = judged
        return Finding("injection", CLASSIFIED, sentence[:SHOWN_PHRASE], None, score, threshold)
    return None


CLASSIFIED = "an instruction to the agent that reads it, recognised by its meaning"
# How a refused writer gets past a scan's false positive (migration 0037, `cli-org checks allow`).
APPROVAL = "an owner may approve this exact text: cli-org checks allow TEXT --reason WHY"


def describe(field: str, found: Finding) -> str:
    """The refusal, in one line: the check that found it, the part of the text, the way past."""
    if found.kind == "secret":
        where = f' ("{found.part}" at character {found.at})' if found.part and found.at else ""
        where = where or (f' ("{found.part}")' if found.part else "")
        return (
            f"{field} looks like it contains {found.what}{where}; facts are readable by every agent"
            f" (if it is no secret, {APPROVAL})"
        )
    if found.score is not None:
        trigger = (
            f"recognised by its meaning: the injection classifier scored this sentence p={found.score:.2f}"
            f' (threshold {found.threshold:.2f}): "{found.part}"'
        )
        return f"{field} contains a prompt-injection phrase ({trigger}); state the fact plainly, or {APPROVAL}"
    return (
        f'{field} contains a prompt-injection phrase ({found.what}: "{found.part}"); state the fact plainly,'
        f" or {APPROVAL}"
    )


# The scan reads at most this many characters of a field, and refuses a longer
# one unread. The longest text any write may hold is a whole notebook store; the patterns
# cost time in proportion to the length (benchmarks/write_scan_speed.py), so an unbounded
# field (100 KB through MCP) would hold a server for seconds.
MAX_SCANNED = max(NOTEBOOK_CAPS.values())


def check_text(field: str, text: str, approved: frozenset[str] = frozenset()) -> None:
    """Refuse control or invisible characters, secrets and prompt-injection phrases in a field.
    A text in `approved` (texts an owner approved, migration 0037) skips the secret and
    injection scans, never the character checks."""
    if len(text) > MAX_SCANNED:
        raise InputError(f"{field} is {len(text)} characters; the limit is {MAX_SCANNED}")
    bad = control_chars(text)
    if bad:
        raise InputError(
            f"{field} contains control characters or line breaks ({', '.join(sorted(set(bad)))}); "
            "put the fact on one line"
        )
    bad = invisible_chars(text)
    if bad:
        raise InputError(f"{field} contains invisible or bidi-control characters ({', '.join(sorted(set(bad)))})")
    if text in approved:
        return
    found = scan_finding(text)
    if found:
        raise ScanRefused(describe(field, found), field, text, found)


def scan_problem(field: str, text: str) -> str | None:
    """What the secret and injection scans find in a field, said for the writer, or None (the
    part of check_text an import runs on multi-line texts too)."""
    found = scan_finding(text)
    return describe(field, found) if found else None


def scan_finding(text: str) -> Finding | None:
    """What the secret and injection scans find in a text, or None."""
    from . import injection

    return _scan(text, injection.available())


# A face checks a fact before it connects, and the library checks it again as it writes (it
# serves every face): the second scan of the same text, classifier embedding included, is
# this cache's, not repeated work. Whether the classifier can run is part of the key.
@functools.lru_cache(maxsize=256)
def _scan(text: str, classifier: bool) -> Finding | None:
    return secret_finding(text) or injection_finding(text)


def check_fact(
    subject: str,
    claim: str,
    source: str | None,
    project: str | None = None,
    via: str | None = None,
    approved: frozenset[str] = frozenset(),
) -> tuple[str, str, str]:
    """Validate a new fact; returns subject, claim and source stripped of outer white space.

    A newline at either end (a pasted line) is stripped like any outer space; one inside a
    field is refused, as is any other control character in any field.
    """
    subject, claim, source = subject.strip(), claim.strip(), (source or "").strip()
    # Lengths first: nothing below reads more than these, as the scan's time grows with the length.
    if len(subject) > MAX_SUBJECT:
        raise InputError(f"subject is {len(subject)} characters; the limit is {MAX_SUBJECT}")
    if len(claim) > MAX_CLAIM:
        raise InputError(f"claim is {len(claim)} characters; the limit is {MAX_CLAIM}: state one fact")
    if len(source) > FIELD_RULES["source"][1]:
        raise InputError(f"source is {len(source)} characters; the limit is {FIELD_RULES['source'][1]}")
    for field, text in (("subject", subject), ("claim", claim), ("source", source), ("project", project or ""),
                        ("via", via or "")):  # fmt: skip
        bad = control_chars(text)
        if bad:
            raise InputError(
                f"{field} contains control characters or line breaks ({', '.join(sorted(set(bad)))}); "
                "put the fact on one line"
            )
    if not subject:
        raise InputError("subject is empty")
    if not claim:
        raise InputError("claim is empty")
    if not source:
        raise InputError("--source is required: a path, #message, t_card or URL")
    if source_form(source) is None:
        raise InputError(f"source {source!r} is not a path, #message, t_card id or http(s) URL")
    check_field("source", source, scan=False)  # scanned with subject and claim below
    check_field("project", project)
    check_field("via", via)
    for field, text in (("subject", subject), ("claim", claim), ("source", source)):
        check_text(field, text, approved)
    return subject, claim, source


def check_field(rule: str, text: str | None, label: str | None = None, *, scan: bool = True) -> None:
    """The database's field rules (rules.FIELD_RULES, migration 0023), said first
    and plainly: the shape, the length, then control characters and the write scan."""
    if text is None:
        return
    label = label or rule
    shape, longest = FIELD_RULES[rule]
    if shape is not None and not re.fullmatch(shape, text):
        if rule == "project":
            raise InputError(f"{label} {text[:80]!r} must be letters, digits, '.', '_' or '-' (at most 64)")
        if rule == "via":
            raise InputError(f"{label} {text[:80]!r} must look like runtime@host")
        raise InputError(f"{label} {text[:80]!r} does not have the expected shape")
    if len(text) > longest:
        raise InputError(f"{label} is {len(text)} characters; the limit is {longest}")
    if scan:
        check_text(label, text)
    elif control_chars(text) or invisible_chars(text):
        check_text(label, text)  # says which characters
