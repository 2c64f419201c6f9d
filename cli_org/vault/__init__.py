"""The markdown vault: scan, embed and search."""
