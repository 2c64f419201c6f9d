"""recall: one question answered from shared facts, bot memory files and the vault."""
