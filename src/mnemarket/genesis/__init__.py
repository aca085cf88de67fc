"""mnemarket.genesis layer."""
