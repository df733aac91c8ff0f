"""PostgreSQL adapters: the schema, migrations and a private local server for tests and the all-in-one role."""
