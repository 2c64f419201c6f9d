"""Write-time checks: what a fact must be, and what it must never carry.

The database enforces the same definition for members who write with plain SQL
(migration 0009): every pattern marked `db` below is copied there verbatim, and the text
folding is implemented twice, here and in SQL, with tests that hold the two together. The
database is never stricter than this module, so the client always refuses first, with the
friendlier message; see tests/test_write_scan.py.

Patterns that run in both places are written in the common subset of Python's `re` and
PostgreSQL's regular expressions: no \\b, \\w or \\s (their meaning differs between the two),
a literal space instead of \\s, lookarounds for word edges, `(?i)` only at the start.
"""

from __future__ import annotations

import base64
import functools
import re
import unicodedata
from dataclasses import dataclass

from .errors import InputError
from .rules import MAX_CLAIM, MAX_SUBJECT

_SOURCE_FORMS = [
    ("url", re.compile(r"^https?://[A-Za-z0-9.-]+(:\d+)?(/\S*)?$")),
    ("message", re.compile(r"^#[A-Za-z0-9][\w.-]*$")),
    ("card", re.compile(r"^t_[A-Za-z0-9][\w-]*$")),
    # A path has a folder or an extension; an optional :line or :start-end follows.
    ("path", re.compile(r"^(~|\.{1,2})?/?([\w@+.-]+/)*[\w@+-][\w@+.-]*(\.[A-Za-z0-9]+|/)(:\d+(-\d+)?)?$")),
    ("path", re.compile(r"^(~|\.{1,2})?/?([\w@+.-]+/)+[\w@+.-]+(:\d+(-\d+)?)?$")),
]


@dataclass(frozen=True)
class Pattern:
    what: str
    regex: str
    db: bool = True  # also enforced by the database trigger (migration 0009), verbatim

    @functools.cached_property
    def compiled(self) -> re.Pattern:
        return re.compile(self.regex)


# A value after `password=`-style keys: not a placeholder (${X}, <x>, %(x)s, ***), not code
# (os.environ[...], getenv(...)), not a word that says there is no value.
_NOT_A_VALUE = r"(?!(?:changeme|example|redacted|placeholder|your|xxx|none|null|true|false|required|optional)(?![a-z]))"
_KEY_NAME = (
    r"(?:password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?key|auth[_-]?token|token"
    r"|private[_-]?key|client[_-]?secret|secret[_-]?key|account[_-]?key)"
)
_VALUE_END = r"(?=[ '\",;]|$)"
_SAID_TO_BE = r" (?:is|was|has been|(?:(?:is|was|has been) )?(?:set|changed|reset) to) "

# Own patterns, run on the raw text. The scanner library (below) covers many more token
# shapes but lacks these, or matches them only in one file format.
SECRET_PATTERNS = [
    # The library knows a fixed list of key types; any "BEGIN ... PRIVATE KEY" header counts here.
    Pattern("a private key block", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    Pattern("an AWS access key", r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![A-Za-z0-9])"),
    # The library wants exactly 36 characters after the prefix; fine-grained tokens are longer.
    Pattern("a GitHub token", r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
    # The library only knows one generation of these keys (with a fixed infix).
    Pattern("an API key", r"(?<![A-Za-z0-9])sk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{20,}"),
    # The library requires digits between the dashes, and does not know app-level tokens.
    Pattern("a chat app token", r"(?:xox[abposr]|xapp)-[A-Za-z0-9-]{10,}"),
    # Incoming-webhook URLs carry their secret in the path; written without a host name.
    Pattern("a webhook URL with its secret", r"/services/T[A-Za-z0-9_]{6,}/B[A-Za-z0-9_]{6,}/[A-Za-z0-9_]{16,}"),
    Pattern("a code-hosting access token", r"(?<![A-Za-z0-9])gl(?:pat|dt|rt|ft|soat|cbt)-[A-Za-z0-9_-]{20,}"),
    Pattern("a Google API key", r"AIza[0-9A-Za-z_-]{35}"),
    Pattern("a Stripe key", r"(?<![A-Za-z0-9])[rsp]k_(?:live|test)_[0-9A-Za-z]{16,}"),
    Pattern("a mail API key", r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{20,}"),
    # The library only finds these inside a registry config line (//host/:_authToken=...).
    Pattern("a package registry token", r"(?<![A-Za-z0-9])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    # Not in the library: secrets-manager service, batch and recovery tokens.
    Pattern("a secrets-manager token", r"(?<![A-Za-z0-9])hv[sbr]\.[A-Za-z0-9_-]{24,}"),
    # The library wants exactly 88 characters; shortened or newer keys slip through.
    Pattern("a storage account key", r"(?i)account_?key *[=:] *[A-Za-z0-9+/]{30,}"),
    Pattern("a JSON web token", r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    Pattern("a bearer token", r"(?<![A-Za-z])Bearer +[A-Za-z0-9._~+/=-]{20,}"),
    # user:password@ or :password@ (no user, as some key-value stores take it); not ${VAR}.
    Pattern("a connection string with a password", r"[a-z][a-z0-9+.-]*://[^ :/@]*:(?![$<{%*])[^ /@]+@"),
    # KEY=value (also inside UPPER_CASE names: PGPASSWORD=, AWS_SECRET_ACCESS_KEY=).
    Pattern(
        "a secret assignment",
        r"(?i)" + _KEY_NAME + r"['\"]? *[=] *['\"]?" + _NOT_A_VALUE + r"(?![$<{%*(\[])[^ '\",;()\[\]]{4,}" + _VALUE_END,
    ),
    # "the password is 'x1y2z3'": a quoted value after "is" or "was set to".
    Pattern(
        "a secret assignment",
        r"(?i)" + _KEY_NAME + _SAID_TO_BE + r"['\"]" + _NOT_A_VALUE + r"[^ '\"]{6,}['\"]",
    ),
    # ... or an unquoted one that mixes letters and digits: "was changed to x1y2z3w4".
    Pattern(
        "a secret assignment",
        r"(?i)"
        + _KEY_NAME
        + _SAID_TO_BE
        + _NOT_A_VALUE
        + r"(?=[^ ]*[0-9])(?=[^ ]*[a-z])[A-Za-z0-9!#%&+=?@^_~.-]{8,}"
        + _VALUE_END,
    ),
    # A long random value said to be a token or secret: "the token for the API is 0f3a...".
    Pattern(
        "a token value",
        r"(?i)(?<![a-z])(?:token|secret|password|api key|access key)(?: [a-z]+){0,4} (?:is|=|:) "
        r"(?=[^ ]*[0-9])[A-Za-z0-9+/_-]{20,}" + _VALUE_END,
    ),
    # A password on a command line: -p x1Y2z3W4 or --password=x1Y2z3W4 (mixed case and digits).
    Pattern(
        "a password on a command line",
        r"(?<![A-Za-z0-9-])(?:-p ?|--password[= ])(?=[^ ]*[A-Z])(?=[^ ]*[a-z])(?=[^ ]*[0-9])[^ /:]{8,}" + _VALUE_END,
    ),
    # The library knows the OAuth secret of this payments provider, not its access tokens.
    Pattern("a payments access token", r"(?<![A-Za-z0-9])sq0atp-[A-Za-z0-9_-]{22}"),
    # key: value, as in YAML or prose. Prose ("Password: must be 14 characters") passes:
    # an unquoted value must hold a letter and a digit.
    Pattern(
        "a secret assignment",
        r"(?i)" + _KEY_NAME + r"['\"]? *: *(?:['\"]" + _NOT_A_VALUE + r"(?![$<{%*])[^ '\"]{4,}['\"]"
        r"|"
        + _NOT_A_VALUE
        + r"(?=[^ '\",;]*[0-9])(?=[^ '\",;]*[a-z])[^ '\",;()\[\]$<{%*][^ '\",;()\[\]]{5,}"
        + _VALUE_END
        + ")",
    ),
]

# The bare 40-character secret half of a cloud key pair: base64 letters with every class
# well mixed, and not the base64 of readable text. Client only (the test is not a regex).
_BARE_40 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=])")

# Detectors from the `detect-secrets` library, used for their token shapes only. Left out:
# the keyword and high-entropy detectors (they refuse commit hashes, UUIDs and prose, and
# the assignment patterns above serve better) and public IP addresses (not secrets).
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
    ("private_key", "PrivateKeyDetector"),
    ("pypi_token", "PypiTokenDetector"),
    ("sendgrid", "SendGridDetector"),
    ("slack", "SlackDetector"),
    ("square_oauth", "SquareOAuthDetector"),
    ("stripe", "StripeDetector"),
    ("telegram_token", "TelegramBotTokenDetector"),
    ("twilio", "TwilioKeyDetector"),
]


@functools.cache
def _library_detectors() -> list:
    """Imported on first use: the library pulls in an HTTP client, which `--help` must not pay for."""
    import importlib

    found = []
    for module, name in _LIBRARY_DETECTORS:
        found.append(getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)())
    return found


# Latin look-alikes from the Cyrillic and Greek alphabets (and a typographic apostrophe),
# folded before the phrase checks. Migration 0009 holds the same two strings.
CONFUSABLES_FROM = "АВЕКМНОРСТХУІЈЅаеорсухіјѕԁԛԝһӏΑΒΕΖΗΙΚΜΝΟΡΤΥΧαοιρτυχνκ’‘"
CONFUSABLES_TO = "ABEKMHOPCTXYIJSaeopcyxijsdqwhlABEZHIKMNOPTYXaoiptuxvk''"
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_CONFUSABLES = str.maketrans(CONFUSABLES_FROM, CONFUSABLES_TO)
_LOWER = str.maketrans(_UPPER, _UPPER.lower())

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
_NEGATED = re.compile(
    r"(?<![a-z])(never|not|cannot|n't) (ignore|disregard|forget|override|bypass|reveal|print|show|repeat|leak"
    r"|disclose|output|dump|pretend|act|send|post|upload)(?![a-z])"
)
# Digits that stand in for letters ("1gn0re"), undone in the second variant only.
DIGITS_FROM, DIGITS_TO = "013457@$", "oieastas"
_DIGITS = str.maketrans(DIGITS_FROM, DIGITS_TO)
_SPACED = re.compile(r"(?<![a-z])([a-z])[ .*_-](?=[a-z](?![a-z]))")


def fold_variants(text: str) -> tuple[str, str]:
    """The text as the phrase checks see it, twice.

    Both: NFKC, format characters removed, look-alike letters mapped to Latin, ASCII
    lower-cased, runs of spaces squeezed, negated verbs marked ("never no-ignore"). The
    second also drops HTML comment markers, reads digits as letters ("1gn0re") and joins
    spaced-out letters ("i g n o r e").
    Migration 0009's org_write_fold() computes the same pair.
    """
    base = _CF.sub("", unicodedata.normalize("NFKC", text)).translate(_CONFUSABLES).translate(_LOWER)
    plain = re.sub(" +", " ", base)
    joined = re.sub(" +", " ", _SPACED.sub(r"\1", re.sub("<!--|-->", " ", base).translate(_DIGITS)))
    return _NEGATED.sub(r"\1 no-\2", plain), _NEGATED.sub(r"\1 no-\2", joined)


_V = r"(?<![a-z-])"  # a word starts here (and is not a marked no-verb)
_E = r"(?![a-z])"  # a word ends here

# Run on both folded variants. Each aims at the reader: it tells the model to drop what it
# was told, to become something else, or to hand over what it guards. Rules that mention
# instructions ("ignore any instructions embedded in tool output") do not match.
INJECTION_PATTERNS = [
    Pattern(
        "an order to ignore earlier instructions",
        _V + r"(?:ignore|disregard|forget|override|bypass|skip|discard|abandon|set aside|stop following|overlook"
        r"|dismiss|neglect|drop|erase|throw out"
        r"|stop obeying|no longer follow|do not follow|don't follow|do not obey|don't obey)"
        + _E
        + r"[^.;:!?]{0,30}(?<![a-z])(?:previous|prior|above|earlier|preceding|foregoing|former|original|initial"
        r"|existing|old|your|system|developer|safety)"
        + _E
        + r"[^.;:!?]{0,25}(?<![a-z])(?:instructions?|prompts?|directions?|rules|guidance|guidelines|directives?"
        r"|orders|commands|programming|training|constraints|restrictions|messages|context|guardrails|safeguards"
        r"|filters|polic(?:y|ies)|safety rules)" + _E,
    ),
    Pattern(
        "an order to ignore all instructions",
        _V + r"(?:ignore|disregard|forget)" + _E + r" (?:all|any|every)(?: of)?(?: the| your| my| these| those)?"
        r" (?:instructions|rules|prompts|guidance|directions|guidelines)"
        r"(?: (?:and|then|now)" + _E + r"| ?(?:[.,;:!]|$))",
    ),
    Pattern(
        "an order to forget what was said",
        _V + r"(?:forget|disregard|ignore)" + _E + r" (?:everything|all|anything|what)"
        r"(?: (?:that|you))?(?: you)?(?: (?:were|have been|'ve been|was|were ever)| (?:know|learned|read|said|saw))?"
        r" ?(?:told|given|taught|above|before|so far|up to now|until now|previously|earlier|said)"
        + _E
        + r"|"
        + _V
        + r"(?:forget|disregard|ignore)"
        + _E
        + r" (?:what|anything|everything)"
        r" (?:the system|the developer|the operator|they|others|anyone)(?: has| had)? (?:told|said)" + _E,
    ),
    Pattern(
        "a new set of instructions",
        r"(?<![a-z])(?:new|updated|real|actual|revised|override|hidden|secret|admin|true)"
        r" (?:instructions?|directives?|orders|system prompt) ?:"
        r"|(?<![a-z])(?:your )?new (?:task|role|goal|objective|mission) ?:"
        r"|(?<![a-z])(?:system prompt|instructions?|rules|prompt) (?:override|update|change) ?:"
        r"|(?<![a-z])(?:treat|consider|read) this as an? (?:system|developer|admin|priority)"
        r" (?:message|instruction|prompt|order)"
        r"|(?<![a-z])(?:instructions?|orders?|directives?) (?:for|to) (?:any|all|every|the) (?:ai|agents?|assistants?"
        r"|llms?|models?|bots?) ?:"
        r"|(?<![a-z])(?:message|note) (?:for|to) the (?:ai|assistant|llm|model) ?:",
    ),
    Pattern(
        "a change of identity",
        r"(?<![a-z])you are now(?: (?:a|an|the|in|my|no longer|free|unrestricted|unfiltered|jailbroken|dan|acting"
        r"|operating|under|going to|allowed to|able to ignore))" + _E,
    ),
    Pattern(
        "a change of behaviour from now on",
        r"(?<![a-z])from now on,? (?:you|the assistant|the agent|the ai|the model)" + _E,
    ),
    Pattern(
        "a role to play",
        _V + r"(?:pretend (?:to be|you are|that you)|act as (?:if you|an? (?:unrestricted|unfiltered|jailbroken|evil"
        r"|different|new))|role-?play as|(?:enable|enter|activate|switch to) (?:developer|dan|god|jailbreak) mode"
        r"|do anything now)" + _E,
    ),
    Pattern(
        "a request for hidden instructions",
        _V
        + r"(?:reveal|print|show|repeat|leak|output|dump|disclose|display|tell me)"
        + _E
        + r"[^.;:!?]{0,20}(?<![a-z])(?:system prompt|hidden instructions|initial prompt|instructions above"
        r"|your instructions|your (?:api keys|secrets|credentials|passwords|tokens))" + _E,
    ),
    Pattern(
        "a request to send secrets away",
        _V
        + r"(?:send|email|post|upload|forward|exfiltrate|paste|transmit)"
        + _E
        + r"[^.;:!?]{0,15}(?<![a-z])(?:api keys|secrets|credentials|passwords|tokens|ssh keys?|private keys?"
        r"|\.env(?: file)?|env files?|environment variables|cookies|session tokens?)" + _E + r"[^.;:!?]{0,30} to" + _E,
    ),
    Pattern(
        "a chat-template marker",
        r"<\|?(?:im_start|im_end|system|endoftext|assistant|user)\|?>|\[/?inst\]|<</?sys>>",
    ),
    Pattern(
        "a message addressed to an AI reader",
        r"(?<![a-z])(?:if you are an? (?:ai|llm|language model|assistant|agent|bot|model|automated)"
        r"|(?:ais?|llms?|assistants?|agents?|models?|bots?) (?:reading|processing|parsing|seeing|summari[sz]ing) this"
        r"|<!--[^>]{0,200}(?<![a-z])(?:ai|assistants?|agents?|llms?|models?|bots?) ?[:,])" + _E,
    ),
    Pattern(
        "an order to keep something from the user",
        r"(?<![a-z])(?:without|do not|don't|never) (?:tell|telling|inform|informing|alert|alerting|notify|notifying"
        r"|letting) (?:the |your )?(?:user|human|operator)"
        + _E
        + r"|(?<![a-z])(?:i|we) (?:hereby )?(?:authori[sz]e|permit|allow) you to"
        + _E,
    ),
]


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


def find_secret(text: str) -> str | None:
    """What secret-like thing the text carries, as "a ..." words, or None."""
    for pattern in SECRET_PATTERNS:
        if pattern.compiled.search(text):
            return pattern.what
    for detector in _library_detectors():
        if any(True for _ in detector.analyze_string(text)):
            return f"a secret ({detector.secret_type})"
    if _bare_cloud_secret(text):
        return "a bare 40-character cloud secret key"
    return None


def find_injection(text: str) -> str | None:
    """Which prompt-injection phrase the text carries, or None."""
    variants = fold_variants(text)
    for pattern in INJECTION_PATTERNS:
        if any(pattern.compiled.search(v) for v in variants):
            return pattern.what
    return None


def check_text(field: str, text: str) -> None:
    """Refuse control or invisible characters, secrets and prompt-injection phrases in a field."""
    bad = control_chars(text)
    if bad:
        raise InputError(
            f"{field} contains control characters or line breaks ({', '.join(sorted(set(bad)))}); "
            "put the fact on one line"
        )
    bad = invisible_chars(text)
    if bad:
        raise InputError(f"{field} contains invisible or bidi-control characters ({', '.join(sorted(set(bad)))})")
    what = find_secret(text)
    if what:
        raise InputError(f"{field} looks like it contains {what}; facts are readable by every agent")
    what = find_injection(text)
    if what:
        raise InputError(f"{field} contains a prompt-injection phrase ({what}); state the fact plainly")


def check_fact(
    subject: str, claim: str, source: str | None, project: str | None = None, via: str | None = None
) -> tuple[str, str, str]:
    """Validate a new fact; returns subject, claim and source stripped of outer white space.

    A newline at either end (a pasted line) is stripped like any outer space; one inside a
    field is refused, as is any other control character in any field.
    """
    subject, claim, source = subject.strip(), claim.strip(), (source or "").strip()
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
    if len(subject) > MAX_SUBJECT:
        raise InputError(f"subject is {len(subject)} characters; the limit is {MAX_SUBJECT}")
    if len(claim) > MAX_CLAIM:
        raise InputError(f"claim is {len(claim)} characters; the limit is {MAX_CLAIM}: state one fact")
    if not source:
        raise InputError("--source is required: a path, #message, t_card or URL")
    if source_form(source) is None:
        raise InputError(f"source {source!r} is not a path, #message, t_card id or http(s) URL")
    if project is not None and not _PROJECT.fullmatch(project):
        raise InputError(f"project {project!r} must be letters, digits, '.', '_' or '-'")
    if via is not None and not _VIA.fullmatch(via):
        raise InputError(f"via {via!r} must look like runtime@host")
    for field, text in (("subject", subject), ("claim", claim), ("source", source)):
        check_text(field, text)
    return subject, claim, source


_PROJECT = re.compile(r"[A-Za-z0-9][\w.-]{0,63}")
_VIA = re.compile(r"[\w.-]{1,64}@[\w.-]{1,128}")
