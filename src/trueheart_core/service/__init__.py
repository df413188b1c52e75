"""The service layer: every public operation over one unit of work of the port. No SQL."""
