-- A term's postings ordered by how densely each note uses it, so scoring a very common term
-- can read its best postings and stop (see search.bm25).
CREATE INDEX vault_postings_by_density ON vault_postings (term, (tf::real / dl) DESC) INCLUDE (file_id, tf, dl);
