"""The built-in plugins: everything OLM means, registered through the ordinary hooks."""
