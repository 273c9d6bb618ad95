"""The console's screens: dashboard, connecting and its dialogs, confirmation, help, logs."""
