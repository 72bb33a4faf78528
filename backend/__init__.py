"""Axiom: chat with your own documents, answered from them only, with citations."""
