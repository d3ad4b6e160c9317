"""Languages: which tree-sitter grammar parses a file, the syntax gate, node-kind knowledge.

Job: everything a pass may ask about a grammar (supertypes, list-like kinds,
identifiers) and the cheap parse check every candidate passes before a test.
May import: tree-sitter and its grammar wheels only; no other gitreduce layer.
"""
