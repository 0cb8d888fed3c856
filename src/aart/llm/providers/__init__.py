"""Providers: one class per kind of endpoint, registered by name (built-ins and plugins alike)."""
