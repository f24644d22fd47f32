"""The DuckDB warehouse: unified records, source adapters, atomic loading, rejects and views."""
