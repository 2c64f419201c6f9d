-- Every row-level policy but the vectors' (vectors.sql) and the proposals' (proposals.sql), each dropped and made again, then
-- put in the form restricted projects call for (org_project_policies_sync, projects.sql).
-- A repeatable file (cli_org/db/migrate.py; docs/migrations.md): each definition here is the only one.

DROP POLICY IF EXISTS archive_messages_read ON public.archive_messages; CREATE POLICY archive_messages_read ON public.archive_messages FOR SELECT USING (true);

DROP POLICY IF EXISTS archive_sessions_read ON public.archive_sessions; CREATE POLICY archive_sessions_read ON public.archive_sessions FOR SELECT USING (true);

DROP POLICY IF EXISTS context_delivered_insert_own ON public.context_delivered; CREATE POLICY context_delivered_insert_own ON public.context_delivered FOR INSERT WITH CHECK ((agent = org_me()));

DROP POLICY IF EXISTS context_delivered_read_own ON public.context_delivered; CREATE POLICY context_delivered_read_own ON public.context_delivered FOR SELECT USING ((agent = org_me()));

DROP POLICY IF EXISTS eval_runs_insert ON public.eval_runs; CREATE POLICY eval_runs_insert ON public.eval_runs FOR INSERT WITH CHECK (((author = org_me()) OR ((author IS NULL) AND org_is_admin())));

DROP POLICY IF EXISTS eval_runs_read ON public.eval_runs; CREATE POLICY eval_runs_read ON public.eval_runs FOR SELECT USING (true);

DROP POLICY IF EXISTS erasures_admin ON public.memory_erasures; CREATE POLICY erasures_admin ON public.memory_erasures FOR INSERT WITH CHECK (( SELECT org_is_admin() AS org_is_admin));

-- An erasure is read with what it erased: one of a fact or a session the caller cannot read
-- (a restricted project, 0035) is hidden with it, by the reader's own policies on those tables.
DROP POLICY IF EXISTS erasures_read ON public.memory_erasures; CREATE POLICY erasures_read ON public.memory_erasures FOR SELECT USING ((((fact_id IS NULL) OR (EXISTS ( SELECT 1
   FROM memory_facts f
  WHERE (f.id = memory_erasures.fact_id)))) AND ((session_id IS NULL) OR (EXISTS ( SELECT 1
   FROM archive_sessions s
  WHERE (s.id = memory_erasures.session_id))))));

DROP POLICY IF EXISTS facts_insert_as_self ON public.memory_facts; CREATE POLICY facts_insert_as_self ON public.memory_facts FOR INSERT WITH CHECK ((author = org_me()));

-- An accepted proposal becomes its agent's fact inside org_proposal_accept (proposals.sql),
-- which runs as the administrator: on a team server the administrator is no superuser, and
-- row-level security, forced, holds for it too.
DROP POLICY IF EXISTS facts_insert_accepted ON public.memory_facts; CREATE POLICY facts_insert_accepted ON public.memory_facts FOR INSERT WITH CHECK (( SELECT org_is_admin() AS org_is_admin));

DROP POLICY IF EXISTS facts_read ON public.memory_facts; CREATE POLICY facts_read ON public.memory_facts FOR SELECT USING (true);

DROP POLICY IF EXISTS facts_retire ON public.memory_facts; CREATE POLICY facts_retire ON public.memory_facts FOR UPDATE USING (true) WITH CHECK (true);

DROP POLICY IF EXISTS pins_read ON public.memory_pins; CREATE POLICY pins_read ON public.memory_pins FOR SELECT USING (true);

DROP POLICY IF EXISTS pins_write ON public.memory_pins; CREATE POLICY pins_write ON public.memory_pins FOR ALL USING (true) WITH CHECK (true);

-- The rows the erase changes, for the definer alone (members have no grant to use them).
DROP POLICY IF EXISTS restores_erase ON public.memory_restores; CREATE POLICY restores_erase ON public.memory_restores FOR UPDATE USING (( SELECT org_is_admin() AS org_is_admin)) WITH CHECK (( SELECT org_is_admin() AS org_is_admin));

DROP POLICY IF EXISTS restores_read ON public.memory_restores; CREATE POLICY restores_read ON public.memory_restores FOR SELECT USING (true);

DROP POLICY IF EXISTS restores_write ON public.memory_restores; CREATE POLICY restores_write ON public.memory_restores FOR INSERT WITH CHECK (true);

DROP POLICY IF EXISTS tidy_log_erase ON public.memory_tidy_log; CREATE POLICY tidy_log_erase ON public.memory_tidy_log FOR UPDATE USING (( SELECT org_is_admin() AS org_is_admin)) WITH CHECK (( SELECT org_is_admin() AS org_is_admin));

DROP POLICY IF EXISTS tidy_log_insert ON public.memory_tidy_log; CREATE POLICY tidy_log_insert ON public.memory_tidy_log FOR INSERT WITH CHECK (((actor = org_me()) AND (EXISTS ( SELECT 1
   FROM memory_facts f
  WHERE ((f.id = memory_tidy_log.fact_id) AND (f.retired_by = org_me()) AND (f.valid_to = now()))))));

DROP POLICY IF EXISTS tidy_log_read ON public.memory_tidy_log; CREATE POLICY tidy_log_read ON public.memory_tidy_log FOR SELECT USING (true);

DROP POLICY IF EXISTS notebook_erase ON public.notebook_entries; CREATE POLICY notebook_erase ON public.notebook_entries FOR UPDATE USING (( SELECT org_is_admin() AS org_is_admin)) WITH CHECK (( SELECT org_is_admin() AS org_is_admin));

DROP POLICY IF EXISTS notebook_insert_own ON public.notebook_entries; CREATE POLICY notebook_insert_own ON public.notebook_entries FOR INSERT WITH CHECK ((agent = org_me()));

DROP POLICY IF EXISTS notebook_read ON public.notebook_entries; CREATE POLICY notebook_read ON public.notebook_entries FOR SELECT USING (org_notebook_readable(agent));

DROP POLICY IF EXISTS notebook_update_own ON public.notebook_entries; CREATE POLICY notebook_update_own ON public.notebook_entries FOR UPDATE USING ((agent = org_me())) WITH CHECK ((agent = org_me()));

DROP POLICY IF EXISTS notebook_versions_erase ON public.notebook_versions; CREATE POLICY notebook_versions_erase ON public.notebook_versions FOR UPDATE USING (( SELECT org_is_admin() AS org_is_admin)) WITH CHECK (( SELECT org_is_admin() AS org_is_admin));

DROP POLICY IF EXISTS notebook_versions_read ON public.notebook_versions; CREATE POLICY notebook_versions_read ON public.notebook_versions FOR SELECT USING (((( SELECT org_notebooks_readable() AS org_notebooks_readable) IS NULL) OR (agent = ANY (( SELECT org_notebooks_readable() AS org_notebooks_readable)::text[]))));

-- The after trigger writes versions as the definer (the admin, who bypasses nothing else).
DROP POLICY IF EXISTS notebook_versions_write ON public.notebook_versions; CREATE POLICY notebook_versions_write ON public.notebook_versions FOR INSERT WITH CHECK (true);

DROP POLICY IF EXISTS project_access_read ON public.org_project_access; CREATE POLICY project_access_read ON public.org_project_access FOR SELECT USING ((project <> ALL (( SELECT org_projects_hidden() AS org_projects_hidden)::text[])));

DROP POLICY IF EXISTS todos_done ON public.org_todos; CREATE POLICY todos_done ON public.org_todos FOR UPDATE USING (true) WITH CHECK (true);

DROP POLICY IF EXISTS todos_insert_as_self ON public.org_todos; CREATE POLICY todos_insert_as_self ON public.org_todos FOR INSERT WITH CHECK (((author = org_me()) AND (done_at IS NULL)));

DROP POLICY IF EXISTS todos_read ON public.org_todos; CREATE POLICY todos_read ON public.org_todos FOR SELECT USING (true);

DROP POLICY IF EXISTS write_approvals_read ON public.org_write_approvals; CREATE POLICY write_approvals_read ON public.org_write_approvals FOR SELECT USING (true);

-- Serves the definer function alone: members hold only SELECT.
DROP POLICY IF EXISTS write_approvals_write ON public.org_write_approvals; CREATE POLICY write_approvals_write ON public.org_write_approvals FOR INSERT WITH CHECK (true);

DROP POLICY IF EXISTS quoted_hits_admin ON public.quoted_hits; CREATE POLICY quoted_hits_admin ON public.quoted_hits FOR ALL USING (( SELECT org_is_admin() AS org_is_admin)) WITH CHECK (( SELECT org_is_admin() AS org_is_admin));

DROP POLICY IF EXISTS quoted_hits_read ON public.quoted_hits; CREATE POLICY quoted_hits_read ON public.quoted_hits FOR SELECT USING (true);

DROP POLICY IF EXISTS quoted_recalls_admin ON public.quoted_recalls; CREATE POLICY quoted_recalls_admin ON public.quoted_recalls FOR ALL USING (( SELECT org_is_admin() AS org_is_admin)) WITH CHECK (( SELECT org_is_admin() AS org_is_admin));

DROP POLICY IF EXISTS quoted_recalls_read ON public.quoted_recalls; CREATE POLICY quoted_recalls_read ON public.quoted_recalls FOR SELECT USING (true);

DROP POLICY IF EXISTS quoted_sessions_admin ON public.quoted_sessions; CREATE POLICY quoted_sessions_admin ON public.quoted_sessions FOR ALL USING (( SELECT org_is_admin() AS org_is_admin)) WITH CHECK (( SELECT org_is_admin() AS org_is_admin));

DROP POLICY IF EXISTS quoted_sessions_read ON public.quoted_sessions; CREATE POLICY quoted_sessions_read ON public.quoted_sessions FOR SELECT USING (true);

DROP POLICY IF EXISTS recall_events_erase ON public.recall_events; CREATE POLICY recall_events_erase ON public.recall_events FOR UPDATE USING (( SELECT org_is_admin() AS org_is_admin)) WITH CHECK (( SELECT org_is_admin() AS org_is_admin));

DROP POLICY IF EXISTS recall_events_insert ON public.recall_events; CREATE POLICY recall_events_insert ON public.recall_events FOR INSERT WITH CHECK (((agent = org_me()) OR ((agent IS NULL) AND org_is_admin())));

DROP POLICY IF EXISTS recall_events_read ON public.recall_events; CREATE POLICY recall_events_read ON public.recall_events FOR SELECT USING (true);

DROP POLICY IF EXISTS recall_hits_erase ON public.recall_hits; CREATE POLICY recall_hits_erase ON public.recall_hits FOR UPDATE USING (( SELECT org_is_admin() AS org_is_admin)) WITH CHECK (( SELECT org_is_admin() AS org_is_admin));

DROP POLICY IF EXISTS recall_hits_insert_own ON public.recall_hits; CREATE POLICY recall_hits_insert_own ON public.recall_hits FOR INSERT WITH CHECK (((agent = org_me()) OR ((agent IS NULL) AND org_is_admin())));

DROP POLICY IF EXISTS recall_hits_read ON public.recall_hits; CREATE POLICY recall_hits_read ON public.recall_hits FOR SELECT USING (((( SELECT org_notebooks_readable() AS org_notebooks_readable) IS NULL) OR (agent = ANY (( SELECT org_notebooks_readable() AS org_notebooks_readable)::text[]))));

DROP POLICY IF EXISTS tool_calls_insert_own ON public.tool_calls; CREATE POLICY tool_calls_insert_own ON public.tool_calls FOR INSERT WITH CHECK (((agent = org_me()) OR ((agent IS NULL) AND org_is_admin())));

DROP POLICY IF EXISTS tool_calls_read ON public.tool_calls; CREATE POLICY tool_calls_read ON public.tool_calls FOR SELECT USING (true);

DROP POLICY IF EXISTS vault_chunks_visible ON public.vault_chunks; CREATE POLICY vault_chunks_visible ON public.vault_chunks FOR SELECT USING ((file_id <> ALL (( SELECT org_hidden_files() AS org_hidden_files)::bigint[])));

-- The (SELECT ...) makes each an init plan: evaluated once per query, not once per row.
DROP POLICY IF EXISTS vault_files_visible ON public.vault_files; CREATE POLICY vault_files_visible ON public.vault_files FOR SELECT USING (((NOT private) OR ( SELECT org_is_owner() AS org_is_owner)));

DROP POLICY IF EXISTS vault_links_visible ON public.vault_links; CREATE POLICY vault_links_visible ON public.vault_links FOR SELECT USING ((file_id <> ALL (( SELECT org_hidden_files() AS org_hidden_files)::bigint[])));

DROP POLICY IF EXISTS vault_postings_visible ON public.vault_postings; CREATE POLICY vault_postings_visible ON public.vault_postings FOR SELECT USING ((file_id <> ALL (( SELECT org_hidden_files() AS org_hidden_files)::bigint[])));

DROP POLICY IF EXISTS vault_tags_visible ON public.vault_tags; CREATE POLICY vault_tags_visible ON public.vault_tags FOR SELECT USING ((file_id <> ALL (( SELECT org_hidden_files() AS org_hidden_files)::bigint[])));

DROP POLICY IF EXISTS vault_terms_visible ON public.vault_terms; CREATE POLICY vault_terms_visible ON public.vault_terms FOR SELECT USING (((NOT private) OR ( SELECT org_is_owner() AS org_is_owner)));

-- The restricted projects' read rules, in the form the org's rows call for.
SELECT public.org_project_policies_sync(true);
