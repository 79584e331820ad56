"""The lifecycle: OLM's Catalog Operator and OLM Operator as controllers over a cluster store.

* :mod:`olmkit.lifecycle.kinds`: the kinds the lifecycle works with (apiVersions, short names).
* :mod:`olmkit.lifecycle.catalogs`: CatalogSources opened through their source-type plugins.

.. versionadded:: 0.1
"""
