"""mnemarket.agents layer."""
