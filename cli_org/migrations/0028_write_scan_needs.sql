-- The write scan no longer tries its patterns in groups: each pattern carries the strings one
-- of which every match holds, and only the patterns whose strings are in the text are run
-- (cli_org/checks/needs.py). A new session compiled every group before reading any text, 1.2
-- to 1.4 s (benchmarks/RESULTS.md, "Cold writes"). The pattern list gains two columns, so it
-- is dropped here and made again, with the new scan, by repeatable/write_checks.sql.
DROP FUNCTION public.org_write_groups();
DROP FUNCTION public.org_write_patterns();
