"""Alembic migrations of the shared database (backend/stores/schema.py), run at start-up by
backend/stores/database.py."""
