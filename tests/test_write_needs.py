"""The write checks run only the patterns that may match (cli_org/checks/needs.py): the
strings a pattern needs must be in every text it matches, or a check would pass a text the
pattern refuses. Checked rule by rule, on every labelled example in both engines, and on
texts generated to match each pattern."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.write_scan_data import PATH, load
from cli_org.checks import write as checks
from cli_org.checks.needs import lowered, may_match, needs

PATTERNS = checks.SECRET_PATTERNS + checks.INJECTION_PATTERNS
DB_PATTERNS = [p for p in PATTERNS if p.db]


def test_the_rules_on_small_patterns():
    assert needs("AKIA[0-9A-Z]{16}") == (False, frozenset({"AKIA"}))
    assert needs("(?:gh[pousr]_|github_pat_)x") == (False, frozenset({f"gh{c}_x" for c in "pousr"} | {"github_pat_x"}))
    # an optional part is that part or nothing; a part that may repeat zero times cuts the run
    assert needs("-----BEGIN (?:RSA )?KEY") == (False, frozenset({"-----BEGIN RSA KEY", "-----BEGIN KEY"}))
    assert needs("scp[^|]{0,80}-d") == (False, frozenset({"scp"}))
    # a lookaround matches nothing: the literal on both sides joins up
    assert needs("(?<![a-z])ignore(?![a-z]) all") == (False, frozenset({"ignore all"}))
    # an alternation needs one of its branches' needs, and nothing when one branch needs nothing
    assert needs("token=[0-9]+|bearer [a-z]+") == (False, frozenset({"token=", "bearer "}))
    assert needs("token=[0-9]+|[a-z]+") is None
    # case-blind: lower case, looked for in the lowered text; case-sensitive keeps the case
    assert needs("(?i)Password=") == (True, frozenset({"password="}))
    assert needs("Password=") == (False, frozenset({"Password="}))


def test_case_blind_needs_see_what_the_matcher_folds():
    # Python's case-blind matcher takes KELVIN SIGN for k and LONG S for s
    assert may_match("(?i)key=", "\u212aEY=1") and may_match("(?i)secret", "\u017fECRET")
    assert lowered("\u212a\u017f\u0130\u0131AZ") == "ksiiaz"
    # a cased character outside ASCII is never needed case-blind (PostgreSQL may fold it otherwise)
    assert needs("(?i)пароль") is None
    assert needs("пароль") == (False, frozenset({"пароль"}))
    # ... and one without case is
    assert needs("(?i)密码") == (True, frozenset({"密码"}))


def _texts() -> list[str]:
    texts = [e.text for e in load() + load(PATH.parent / "write_scan_blind.tsv")]
    texts += [e.text for e in load(PATH.parent / "write_scan_blind2.tsv")]
    out = []
    for text in texts:
        out += [text, text.upper(), text.lower(), *checks.fold_variants(text)]
    return out


TEXTS = _texts()


@pytest.mark.slow
def test_every_labelled_match_passes_its_needs():
    matched = 0
    for pattern in PATTERNS:
        for text in TEXTS:
            if pattern.compiled.search(text):
                matched += 1
                assert may_match(pattern.regex, text), (pattern.what, text)
    assert matched > 500  # the examples exercise the patterns


def test_most_clean_texts_run_few_patterns():
    # The point of the needs: a plain claim compiles a handful of patterns, not all of them.
    clean = [e.text for e in load() if e.label == "benign"]
    assert len(clean) > 50
    ran = sorted(sum(p.may_match(t) for p in DB_PATTERNS) for t in clean)
    assert ran[len(ran) // 2] <= 8, ran


@pytest.mark.slow
@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.what)
@settings(max_examples=8, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_generated_matches_pass_their_needs(pattern, data):
    try:
        text = data.draw(st.from_regex(pattern.regex))
    except Exception:  # a construct the generator cannot invert (some lookarounds)
        pytest.skip("the generator cannot invert this pattern")
    if pattern.compiled.search(text):
        assert may_match(pattern.regex, text), text


@pytest.mark.slow
def test_the_database_filters_as_the_client(org):
    tricky = ["\u212aEY=abc", "PASSWORD IS x", "Пароль: x", "密码是 x", "plain words", "ignore ALL previous"]
    with org.admin() as conn:
        rows = conn.execute(
            "SELECT what, pattern, caseless, needs FROM public.org_write_patterns() WITH ORDINALITY AS w"
            "(kind, what, pattern, unless, caseless, needs, n) ORDER BY n"
        ).fetchall()
        assert [r["pattern"] for r in rows] == [p.regex for p in DB_PATTERNS]
        for row, pattern in zip(rows, DB_PATTERNS, strict=True):
            known = needs(pattern.regex)
            assert (row["caseless"], frozenset(row["needs"] or ())) == (known or (False, frozenset()))
        for text in TEXTS[::7] + tricky:
            got = conn.execute(
                "SELECT array_agg(org_write_may(w.caseless, w.needs, %(t)s, org_write_lowered(%(t)s)) ORDER BY n)"
                " AS may FROM public.org_write_patterns() WITH ORDINALITY"
                " AS w(kind, what, pattern, unless, caseless, needs, n)",
                {"t": text},
            ).fetchone()["may"]
            assert got == [may_match(p.regex, text) for p in DB_PATTERNS], text


@pytest.mark.slow
def test_warming_up_the_write_path_writes_nothing_and_compiles_the_scan(org):
    # What `cli-org mcp` does as it starts, so that its first org_remember costs what a later
    # one does (benchmarks/cold_writes.py): a member may run it, and it leaves no row behind.
    from cli_org.store.facts import warm_up_writes

    with org.admin() as conn:
        before = conn.execute("SELECT count(*) AS n FROM memory_facts").fetchone()["n"]
    with org.login(f"{org.name}_bot", "bot-pw") as conn:
        warm_up_writes(conn)
        assert conn.execute("SELECT org_write_scan(ARRAY['claim'], ARRAY['plain words']) AS p").fetchone()["p"] is None
    with org.admin() as conn:
        assert conn.execute("SELECT count(*) AS n FROM memory_facts").fetchone()["n"] == before
