"""The pure layer: DTOs, enums and rules. No I/O, and nothing here knows the port."""
