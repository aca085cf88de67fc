"""mnemarket.sim layer."""
