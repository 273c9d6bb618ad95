"""Dashboard widgets: each receives a snapshot (``spectui.ui.views``) and posts ``...Requested`` messages."""
