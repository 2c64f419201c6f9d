-- The write checks that define a valid fact, enforced in the database for members who
-- insert with plain SQL. cli_org/checks.py runs the same checks first (with the friendlier
-- message and more detectors); the database is never stricter than it. Every pattern below
-- is a verbatim copy of one in checks.py marked db=True, and org_write_fold() mirrors
-- checks.fold_variants(); tests/test_write_scan.py holds the copies together.
-- Every function pins search_path and qualifies what it references, so a temporary table
-- or function of a member cannot stand in for ours.

-- The text as the phrase checks see it, twice (see checks.fold_variants): NFKC, format
-- characters removed, Cyrillic and Greek look-alikes mapped to Latin, ASCII lower-cased,
-- spaces squeezed, negated verbs marked; the second also without HTML comment markers,
-- digits read as letters and spaced-out letters joined.
CREATE FUNCTION public.org_write_fold(t text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, public, pg_temp AS $$
    WITH base AS (
        SELECT pg_catalog.translate(
                   pg_catalog.translate(
                       pg_catalog.regexp_replace(pg_catalog.normalize(t, 'NFKC'), '[\U000000ad-\U000000ad\U00000600-\U00000605\U0000061c-\U0000061c\U000006dd-\U000006dd\U0000070f-\U0000070f\U00000890-\U00000891\U000008e2-\U000008e2\U0000180e-\U0000180e\U0000200b-\U0000200f\U0000202a-\U0000202e\U00002060-\U00002064\U00002066-\U0000206f\U0000feff-\U0000feff\U0000fff9-\U0000fffb\U000110bd-\U000110bd\U000110cd-\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001-\U000e0001\U000e0020-\U000e007f]', '', 'g'),
                       'АВЕКМНОРСТХУІЈЅаеорсухіјѕԁԛԝһӏΑΒΕΖΗΙΚΜΝΟΡΤΥΧαοιρτυχνκ’‘',
                       'ABEKMHOPCTXYIJSaeopcyxijsdqwhlABEZHIKMNOPTYXaoiptuxvk'''''),
                   'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') AS b
    )
    SELECT ARRAY[
        pg_catalog.regexp_replace(pg_catalog.regexp_replace(b, ' +', ' ', 'g'),
            '(?<![a-z])(never|not|cannot|n''t) (ignore|disregard|forget|override|bypass|reveal|print|show|repeat|leak|disclose|output|dump|pretend|act|send|post|upload)(?![a-z])', '\1 no-\2', 'g'),
        pg_catalog.regexp_replace(
            pg_catalog.regexp_replace(
                pg_catalog.regexp_replace(
                    pg_catalog.translate(pg_catalog.regexp_replace(b, '<!--|-->', ' ', 'g'),
                                         '013457@$', 'oieastas'),
                    '(?<![a-z])([a-z])[ .*_-](?=[a-z](?![a-z]))', '\1', 'g'),
                ' +', ' ', 'g'),
            '(?<![a-z])(never|not|cannot|n''t) (ignore|disregard|forget|override|bypass|reveal|print|show|repeat|leak|disclose|output|dump|pretend|act|send|post|upload)(?![a-z])', '\1 no-\2', 'g')
    ]
    FROM base
$$;

-- The secret and injection patterns the database enforces: a subset of the client's (the
-- client adds the detect-secrets detectors and a bare-key heuristic).
CREATE FUNCTION public.org_write_patterns() RETURNS TABLE (kind text, what text, pattern text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, public, pg_temp AS $$
    VALUES
        ('secret', 'a private key block',
         '-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----'),
        ('secret', 'an AWS access key',
         '(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![A-Za-z0-9])'),
        ('secret', 'a GitHub token',
         '(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})'),
        ('secret', 'an API key',
         '(?<![A-Za-z0-9])sk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{20,}'),
        ('secret', 'a chat app token',
         '(?:xox[abposr]|xapp)-[A-Za-z0-9-]{10,}'),
        ('secret', 'a webhook URL with its secret',
         '/services/T[A-Za-z0-9_]{6,}/B[A-Za-z0-9_]{6,}/[A-Za-z0-9_]{16,}'),
        ('secret', 'a code-hosting access token',
         '(?<![A-Za-z0-9])gl(?:pat|dt|rt|ft|soat|cbt)-[A-Za-z0-9_-]{20,}'),
        ('secret', 'a Google API key',
         'AIza[0-9A-Za-z_-]{35}'),
        ('secret', 'a Stripe key',
         '(?<![A-Za-z0-9])[rsp]k_(?:live|test)_[0-9A-Za-z]{16,}'),
        ('secret', 'a mail API key',
         'SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{20,}'),
        ('secret', 'a package registry token',
         '(?<![A-Za-z0-9])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])'),
        ('secret', 'a secrets-manager token',
         '(?<![A-Za-z0-9])hv[sbr]\.[A-Za-z0-9_-]{24,}'),
        ('secret', 'a storage account key',
         '(?i)account_?key *[=:] *[A-Za-z0-9+/]{30,}'),
        ('secret', 'a JSON web token',
         'eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}'),
        ('secret', 'a bearer token',
         '(?<![A-Za-z])Bearer +[A-Za-z0-9._~+/=-]{20,}'),
        ('secret', 'a connection string with a password',
         '[a-z][a-z0-9+.-]*://[^ :/@]*:(?![$<{%*])[^ /@]+@'),
        ('secret', 'a secret assignment',
         '(?i)(?:password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?key|auth[_-]?token|token|private[_-]?key|client[_-]?secret|secret[_-]?key|account[_-]?key)[''\"]? *[=] *[''\"]?(?!(?:changeme|example|redacted|placeholder|your|xxx|none|null|true|false|required|optional)(?![a-z]))(?![$<{%*(\[])[^ ''\",;()\[\]]{4,}(?=[ ''\",;]|$)'),
        ('secret', 'a secret assignment',
         '(?i)(?:password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?key|auth[_-]?token|token|private[_-]?key|client[_-]?secret|secret[_-]?key|account[_-]?key) (?:is|was|has been|(?:(?:is|was|has been) )?(?:set|changed|reset) to) [''\"](?!(?:changeme|example|redacted|placeholder|your|xxx|none|null|true|false|required|optional)(?![a-z]))[^ ''\"]{6,}[''\"]'),
        ('secret', 'a secret assignment',
         '(?i)(?:password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?key|auth[_-]?token|token|private[_-]?key|client[_-]?secret|secret[_-]?key|account[_-]?key) (?:is|was|has been|(?:(?:is|was|has been) )?(?:set|changed|reset) to) (?!(?:changeme|example|redacted|placeholder|your|xxx|none|null|true|false|required|optional)(?![a-z]))(?=[^ ]*[0-9])(?=[^ ]*[a-z])[A-Za-z0-9!#%&+=?@^_~.-]{8,}(?=[ ''\",;]|$)'),
        ('secret', 'a token value',
         '(?i)(?<![a-z])(?:token|secret|password|api key|access key)(?: [a-z]+){0,4} (?:is|=|:) (?=[^ ]*[0-9])[A-Za-z0-9+/_-]{20,}(?=[ ''\",;]|$)'),
        ('secret', 'a password on a command line',
         '(?<![A-Za-z0-9-])(?:-p ?|--password[= ])(?=[^ ]*[A-Z])(?=[^ ]*[a-z])(?=[^ ]*[0-9])[^ /:]{8,}(?=[ ''\",;]|$)'),
        ('secret', 'a payments access token',
         '(?<![A-Za-z0-9])sq0atp-[A-Za-z0-9_-]{22}'),
        ('secret', 'a secret assignment',
         '(?i)(?:password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?key|auth[_-]?token|token|private[_-]?key|client[_-]?secret|secret[_-]?key|account[_-]?key)[''\"]? *: *(?:[''\"](?!(?:changeme|example|redacted|placeholder|your|xxx|none|null|true|false|required|optional)(?![a-z]))(?![$<{%*])[^ ''\"]{4,}[''\"]|(?!(?:changeme|example|redacted|placeholder|your|xxx|none|null|true|false|required|optional)(?![a-z]))(?=[^ ''\",;]*[0-9])(?=[^ ''\",;]*[a-z])[^ ''\",;()\[\]$<{%*][^ ''\",;()\[\]]{5,}(?=[ ''\",;]|$))'),
        ('injection', 'an order to ignore earlier instructions',
         '(?<![a-z-])(?:ignore|disregard|forget|override|bypass|skip|discard|abandon|set aside|stop following|overlook|dismiss|neglect|drop|erase|throw out|stop obeying|no longer follow|do not follow|don''t follow|do not obey|don''t obey)(?![a-z])[^.;:!?]{0,30}(?<![a-z])(?:previous|prior|above|earlier|preceding|foregoing|former|original|initial|existing|old|your|system|developer|safety)(?![a-z])[^.;:!?]{0,25}(?<![a-z])(?:instructions?|prompts?|directions?|rules|guidance|guidelines|directives?|orders|commands|programming|training|constraints|restrictions|messages|context|guardrails|safeguards|filters|polic(?:y|ies)|safety rules)(?![a-z])'),
        ('injection', 'an order to ignore all instructions',
         '(?<![a-z-])(?:ignore|disregard|forget)(?![a-z]) (?:all|any|every)(?: of)?(?: the| your| my| these| those)? (?:instructions|rules|prompts|guidance|directions|guidelines)(?: (?:and|then|now)(?![a-z])| ?(?:[.,;:!]|$))'),
        ('injection', 'an order to forget what was said',
         '(?<![a-z-])(?:forget|disregard|ignore)(?![a-z]) (?:everything|all|anything|what)(?: (?:that|you))?(?: you)?(?: (?:were|have been|''ve been|was|were ever)| (?:know|learned|read|said|saw))? ?(?:told|given|taught|above|before|so far|up to now|until now|previously|earlier|said)(?![a-z])|(?<![a-z-])(?:forget|disregard|ignore)(?![a-z]) (?:what|anything|everything) (?:the system|the developer|the operator|they|others|anyone)(?: has| had)? (?:told|said)(?![a-z])'),
        ('injection', 'a new set of instructions',
         '(?<![a-z])(?:new|updated|real|actual|revised|override|hidden|secret|admin|true) (?:instructions?|directives?|orders|system prompt) ?:|(?<![a-z])(?:your )?new (?:task|role|goal|objective|mission) ?:|(?<![a-z])(?:system prompt|instructions?|rules|prompt) (?:override|update|change) ?:|(?<![a-z])(?:treat|consider|read) this as an? (?:system|developer|admin|priority) (?:message|instruction|prompt|order)|(?<![a-z])(?:instructions?|orders?|directives?) (?:for|to) (?:any|all|every|the) (?:ai|agents?|assistants?|llms?|models?|bots?) ?:|(?<![a-z])(?:message|note) (?:for|to) the (?:ai|assistant|llm|model) ?:'),
        ('injection', 'a change of identity',
         '(?<![a-z])you are now(?: (?:a|an|the|in|my|no longer|free|unrestricted|unfiltered|jailbroken|dan|acting|operating|under|going to|allowed to|able to ignore))(?![a-z])'),
        ('injection', 'a change of behaviour from now on',
         '(?<![a-z])from now on,? (?:you|the assistant|the agent|the ai|the model)(?![a-z])'),
        ('injection', 'a role to play',
         '(?<![a-z-])(?:pretend (?:to be|you are|that you)|act as (?:if you|an? (?:unrestricted|unfiltered|jailbroken|evil|different|new))|role-?play as|(?:enable|enter|activate|switch to) (?:developer|dan|god|jailbreak) mode|do anything now)(?![a-z])'),
        ('injection', 'a request for hidden instructions',
         '(?<![a-z-])(?:reveal|print|show|repeat|leak|output|dump|disclose|display|tell me)(?![a-z])[^.;:!?]{0,20}(?<![a-z])(?:system prompt|hidden instructions|initial prompt|instructions above|your instructions|your (?:api keys|secrets|credentials|passwords|tokens))(?![a-z])'),
        ('injection', 'a request to send secrets away',
         '(?<![a-z-])(?:send|email|post|upload|forward|exfiltrate|paste|transmit)(?![a-z])[^.;:!?]{0,15}(?<![a-z])(?:api keys|secrets|credentials|passwords|tokens|ssh keys?|private keys?|\.env(?: file)?|env files?|environment variables|cookies|session tokens?)(?![a-z])[^.;:!?]{0,30} to(?![a-z])'),
        ('injection', 'a chat-template marker',
         '<\|?(?:im_start|im_end|system|endoftext|assistant|user)\|?>|\[/?inst\]|<</?sys>>'),
        ('injection', 'a message addressed to an AI reader',
         '(?<![a-z])(?:if you are an? (?:ai|llm|language model|assistant|agent|bot|model|automated)|(?:ais?|llms?|assistants?|agents?|models?|bots?) (?:reading|processing|parsing|seeing|summari[sz]ing) this|<!--[^>]{0,200}(?<![a-z])(?:ai|assistants?|agents?|llms?|models?|bots?) ?[:,])(?![a-z])'),
        ('injection', 'an order to keep something from the user',
         '(?<![a-z])(?:without|do not|don''t|never) (?:tell|telling|inform|informing|alert|alerting|notify|notifying|letting) (?:the |your )?(?:user|human|operator)(?![a-z])|(?<![a-z])(?:i|we) (?:hereby )?(?:authori[sz]e|permit|allow) you to(?![a-z])')
$$;

-- Is this one of the source forms checks.py accepts? Looser than the client on purpose
-- (no spaces; an http(s) URL, #message, t_card, or a path with a folder or an extension;
-- no other scheme), so that no source the client allows is refused here.
CREATE FUNCTION public.org_source_ok(s text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, public, pg_temp AS $$
    SELECT s ~ '^(https?://[^ ]+|#[^ ]+|t_[^ ]+|[^ ]*/[^ ]*|[^ ]*\.[A-Za-z0-9]+(:[^ ]+)?)$'
       AND (s !~ '://' OR s ~ '^https?://')
$$;

-- What is wrong with one text field, as the client would say it, or NULL.
CREATE FUNCTION public.org_write_problem(field text, t text, scan boolean) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    folded text[];
    p record;
BEGIN
    IF t IS NULL THEN
        RETURN NULL;
    END IF;
    -- Control characters (Cc) and line or paragraph separators (Zl, Zp).
    IF t ~ '[\x01-\x1f\x7f-\x9f\u2028\u2029]' THEN
        RETURN format('%s contains control characters or line breaks; put the fact on one line', field);
    END IF;
    IF t ~ '[\U000000ad-\U000000ad\U00000600-\U00000605\U0000061c-\U0000061c\U000006dd-\U000006dd\U0000070f-\U0000070f\U00000890-\U00000891\U000008e2-\U000008e2\U0000180e-\U0000180e\U0000200b-\U0000200f\U0000202a-\U0000202e\U00002060-\U00002064\U00002066-\U0000206f\U0000feff-\U0000feff\U0000fff9-\U0000fffb\U000110bd-\U000110bd\U000110cd-\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001-\U000e0001\U000e0020-\U000e007f]' THEN
        RETURN format('%s contains invisible or bidi-control characters', field);
    END IF;
    IF NOT scan THEN
        RETURN NULL;
    END IF;
    FOR p IN SELECT * FROM public.org_write_patterns() AS w WHERE w.kind = 'secret' LOOP
        IF t ~ p.pattern THEN
            RETURN format('%s looks like it contains %s; facts are readable by every agent', field, p.what);
        END IF;
    END LOOP;
    folded := public.org_write_fold(t);
    FOR p IN SELECT * FROM public.org_write_patterns() AS w WHERE w.kind = 'injection' LOOP
        IF folded[1] ~ p.pattern OR folded[2] ~ p.pattern THEN
            RETURN format('%s contains a prompt-injection phrase (%s); state the fact plainly', field, p.what);
        END IF;
    END LOOP;
    RETURN NULL;
END $$;

-- On insert every field is checked; on update only the fields that change, so facts
-- stored before this migration can still be retired.
CREATE FUNCTION public.org_write_checks() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp AS $$
DECLARE
    problem text;
    inserting boolean := TG_OP = 'INSERT';
BEGIN
    IF (inserting OR NEW.source IS DISTINCT FROM OLD.source) AND NOT public.org_source_ok(NEW.source) THEN
        RAISE EXCEPTION 'source % is not a path, #message, t_card id or http(s) URL', pg_catalog.quote_literal(NEW.source)
            USING ERRCODE = '23514';
    END IF;
    problem := coalesce(
        CASE WHEN inserting OR NEW.subject IS DISTINCT FROM OLD.subject
             THEN public.org_write_problem('subject', NEW.subject, true) END,
        CASE WHEN inserting OR NEW.claim IS DISTINCT FROM OLD.claim
             THEN public.org_write_problem('claim', NEW.claim, true) END,
        CASE WHEN inserting OR NEW.source IS DISTINCT FROM OLD.source
             THEN public.org_write_problem('source', NEW.source, true) END,
        CASE WHEN inserting OR NEW.project IS DISTINCT FROM OLD.project
             THEN public.org_write_problem('project', NEW.project, false) END,
        CASE WHEN inserting OR NEW.via IS DISTINCT FROM OLD.via
             THEN public.org_write_problem('via', NEW.via, false) END);
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION '%', problem USING ERRCODE = '23514';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER memory_facts_write_checks
    BEFORE INSERT OR UPDATE ON public.memory_facts
    FOR EACH ROW EXECUTE FUNCTION public.org_write_checks();
