"""mnemarket.cli layer."""
