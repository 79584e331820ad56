pytest_plugins = ["olmkit.testing"]
