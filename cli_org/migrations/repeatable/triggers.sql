-- Every trigger but the vectors' (vectors.sql), each dropped and made again.
-- A repeatable file (cli_org/db/migrate.py; docs/migrations.md): each definition here is the only one.

DROP TRIGGER IF EXISTS eval_runs_field_checks ON public.eval_runs; CREATE TRIGGER eval_runs_field_checks BEFORE INSERT ON public.eval_runs FOR EACH ROW EXECUTE FUNCTION org_field_checks('git_commit', 'git_commit', 'embedder', 'embedder', 'golden_file', 'golden_file', 'project', 'project', 'cases', 'cases');

DROP TRIGGER IF EXISTS eval_runs_project_guard ON public.eval_runs; CREATE TRIGGER eval_runs_project_guard BEFORE INSERT ON public.eval_runs FOR EACH ROW EXECUTE FUNCTION org_project_write_guard();

DROP TRIGGER IF EXISTS memory_erasures_field_checks ON public.memory_erasures; CREATE TRIGGER memory_erasures_field_checks BEFORE INSERT ON public.memory_erasures FOR EACH ROW EXECUTE FUNCTION org_field_checks('reason', 'reason', 'erased_via', 'via');

DROP TRIGGER IF EXISTS memory_facts_field_checks ON public.memory_facts; CREATE TRIGGER memory_facts_field_checks BEFORE INSERT OR UPDATE ON public.memory_facts FOR EACH ROW EXECUTE FUNCTION org_field_checks('source', 'source-', 'project', 'project', 'via', 'via', 'retired_reason', 'reason');

DROP TRIGGER IF EXISTS memory_facts_project_guard ON public.memory_facts; CREATE TRIGGER memory_facts_project_guard BEFORE INSERT OR UPDATE ON public.memory_facts FOR EACH ROW EXECUTE FUNCTION org_project_write_guard();

DROP TRIGGER IF EXISTS memory_facts_stamp_via ON public.memory_facts; CREATE TRIGGER memory_facts_stamp_via BEFORE INSERT OR UPDATE ON public.memory_facts FOR EACH ROW EXECUTE FUNCTION org_stamp_via();

DROP TRIGGER IF EXISTS memory_facts_stay_erased ON public.memory_facts; CREATE TRIGGER memory_facts_stay_erased BEFORE UPDATE ON public.memory_facts FOR EACH ROW EXECUTE FUNCTION org_stay_erased();

DROP TRIGGER IF EXISTS memory_facts_unpin_retired ON public.memory_facts; CREATE TRIGGER memory_facts_unpin_retired AFTER UPDATE OF valid_to ON public.memory_facts FOR EACH ROW WHEN (((old.valid_to IS NULL) AND (new.valid_to IS NOT NULL))) EXECUTE FUNCTION org_unpin_retired();

DROP TRIGGER IF EXISTS memory_facts_write_checks ON public.memory_facts; CREATE TRIGGER memory_facts_write_checks BEFORE INSERT OR UPDATE ON public.memory_facts FOR EACH ROW EXECUTE FUNCTION org_write_checks();

DROP TRIGGER IF EXISTS memory_pins_cap ON public.memory_pins; CREATE TRIGGER memory_pins_cap AFTER INSERT OR UPDATE ON public.memory_pins FOR EACH ROW EXECUTE FUNCTION org_pin_cap_check();

DROP TRIGGER IF EXISTS memory_pins_field_checks ON public.memory_pins; CREATE TRIGGER memory_pins_field_checks BEFORE INSERT OR UPDATE ON public.memory_pins FOR EACH ROW EXECUTE FUNCTION org_field_checks('project', 'project', 'unpin_reason', 'reason');

DROP TRIGGER IF EXISTS memory_pins_project_guard ON public.memory_pins; CREATE TRIGGER memory_pins_project_guard BEFORE INSERT OR UPDATE ON public.memory_pins FOR EACH ROW EXECUTE FUNCTION org_project_write_guard();

DROP TRIGGER IF EXISTS memory_pins_via ON public.memory_pins; CREATE TRIGGER memory_pins_via BEFORE INSERT OR UPDATE ON public.memory_pins FOR EACH ROW EXECUTE FUNCTION org_stamp_via();

DROP TRIGGER IF EXISTS memory_restores_field_checks ON public.memory_restores; CREATE TRIGGER memory_restores_field_checks BEFORE INSERT ON public.memory_restores FOR EACH ROW EXECUTE FUNCTION org_field_checks('why', 'reason', 'retired_reason', 'reason');

DROP TRIGGER IF EXISTS memory_restores_via ON public.memory_restores; CREATE TRIGGER memory_restores_via BEFORE INSERT ON public.memory_restores FOR EACH ROW EXECUTE FUNCTION org_stamp_via();

DROP TRIGGER IF EXISTS memory_tidy_log_fact_guard ON public.memory_tidy_log; CREATE TRIGGER memory_tidy_log_fact_guard BEFORE INSERT ON public.memory_tidy_log FOR EACH ROW EXECUTE FUNCTION org_fact_write_guard();

DROP TRIGGER IF EXISTS memory_tidy_log_field_checks ON public.memory_tidy_log; CREATE TRIGGER memory_tidy_log_field_checks BEFORE INSERT ON public.memory_tidy_log FOR EACH ROW EXECUTE FUNCTION org_field_checks('evidence', 'evidence');

DROP TRIGGER IF EXISTS notebook_entries_after ON public.notebook_entries; CREATE TRIGGER notebook_entries_after AFTER INSERT OR UPDATE ON public.notebook_entries FOR EACH ROW EXECUTE FUNCTION org_notebook_after();

DROP TRIGGER IF EXISTS notebook_entries_before ON public.notebook_entries; CREATE TRIGGER notebook_entries_before BEFORE INSERT OR UPDATE ON public.notebook_entries FOR EACH ROW EXECUTE FUNCTION org_notebook_before();

DROP TRIGGER IF EXISTS notebook_entries_cap ON public.notebook_entries; CREATE TRIGGER notebook_entries_cap AFTER INSERT OR UPDATE ON public.notebook_entries FOR EACH ROW EXECUTE FUNCTION org_notebook_cap_check();

DROP TRIGGER IF EXISTS notebook_versions_via ON public.notebook_versions; CREATE TRIGGER notebook_versions_via BEFORE INSERT ON public.notebook_versions FOR EACH ROW EXECUTE FUNCTION org_stamp_via();

DROP TRIGGER IF EXISTS org_project_access_checks ON public.org_project_access; CREATE TRIGGER org_project_access_checks BEFORE INSERT OR UPDATE ON public.org_project_access FOR EACH ROW EXECUTE FUNCTION org_field_checks('project', 'project');

DROP TRIGGER IF EXISTS org_project_access_sync ON public.org_project_access; CREATE TRIGGER org_project_access_sync AFTER INSERT OR DELETE OR UPDATE OR TRUNCATE ON public.org_project_access FOR EACH STATEMENT EXECUTE FUNCTION org_project_access_changed();

DROP TRIGGER IF EXISTS org_todos_field_checks ON public.org_todos; CREATE TRIGGER org_todos_field_checks BEFORE INSERT OR UPDATE ON public.org_todos FOR EACH ROW EXECUTE FUNCTION org_field_checks('project', 'project');

DROP TRIGGER IF EXISTS org_todos_project_guard ON public.org_todos; CREATE TRIGGER org_todos_project_guard BEFORE INSERT OR UPDATE ON public.org_todos FOR EACH ROW EXECUTE FUNCTION org_project_write_guard();

DROP TRIGGER IF EXISTS org_todos_via ON public.org_todos; CREATE TRIGGER org_todos_via BEFORE INSERT OR UPDATE ON public.org_todos FOR EACH ROW EXECUTE FUNCTION org_stamp_via();

DROP TRIGGER IF EXISTS org_todos_write_checks ON public.org_todos; CREATE TRIGGER org_todos_write_checks BEFORE INSERT OR UPDATE ON public.org_todos FOR EACH ROW EXECUTE FUNCTION org_todo_checks();

DROP TRIGGER IF EXISTS recall_events_field_checks ON public.recall_events; CREATE TRIGGER recall_events_field_checks BEFORE INSERT ON public.recall_events FOR EACH ROW EXECUTE FUNCTION org_field_checks('project', 'project-', 'query', 'query-');

DROP TRIGGER IF EXISTS recall_events_project_guard ON public.recall_events; CREATE TRIGGER recall_events_project_guard BEFORE INSERT ON public.recall_events FOR EACH ROW EXECUTE FUNCTION org_project_write_guard();

DROP TRIGGER IF EXISTS vault_files_private_moves_terms ON public.vault_files; CREATE TRIGGER vault_files_private_moves_terms AFTER UPDATE OF private ON public.vault_files FOR EACH ROW WHEN ((old.private IS DISTINCT FROM new.private)) EXECUTE FUNCTION org_vault_terms_move();
