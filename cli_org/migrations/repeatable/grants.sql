-- What members may call: every EXECUTE grant to the member group on a function of ours (but
-- the vectors', in vectors.sql), in one place. It runs after the numbered migrations (the
-- first of them makes the group). A function no grant names here is not the members' to
-- call: its file revokes it from PUBLIC. To take a grant back, write the REVOKE here.
-- A repeatable file (cli_org/db/migrate.py; docs/migrations.md): each definition here is the only one.

DO $$
BEGIN
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.fact_word_pieces(text,text) TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_approve_text(text,text) TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_erase_fact(bigint,text,text[]) TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_erase_message(bigint,bigint,text) TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_forget(bigint,text) TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_hidden_files() TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_is_owner() TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_notebook_cap(text) TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_notebook_lock() TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_notebook_readable(text) TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_notebooks_readable() TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_pin(bigint,text) TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_project_readable(text) TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_projects_hidden() TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_restore(bigint,text) TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_restrict_project(text,text[]) TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_retirement_pin(bigint,timestamp with time zone,text) TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_sessions_hidden() TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_supersede(bigint,bigint) TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_text_sha256(text) TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_todo_done(bigint) TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_unpin(bigint) TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_via() TO %I', public.org_member_role());
    EXECUTE format('GRANT EXECUTE ON FUNCTION public.org_write_approved(text) TO %I', public.org_member_role());
END $$;
