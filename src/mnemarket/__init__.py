"""mnemarket: agent world simulations in an artifact economy where memory is a tradable artifact."""

__version__ = "0.1.0"
