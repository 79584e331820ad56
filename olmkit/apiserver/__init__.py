"""``olmkit serve``: the cluster store as a Kubernetes API server, for kubectl and client libraries.

* :mod:`olmkit.apiserver.app`: routing, discovery, CRUD, patch, watch, tables, ``Status`` errors;
* :mod:`olmkit.apiserver.resources`: what is served (built-in kinds and stored CRDs);
* :mod:`olmkit.apiserver.watch`: one reader of the store fanned out to every watch;
* :mod:`olmkit.apiserver.openapi`: OpenAPI for ``kubectl explain`` (OLM's kinds: the schemas of
  :mod:`olmkit.lifecycle.olmcrds`, the CRDs ``olmkit cluster init`` installs);
* :mod:`olmkit.apiserver.apply`: server-side apply and field ownership (``managedFields``);
* :mod:`olmkit.apiserver.protobuf`: the protobuf bodies of kubectl's typed ``create`` commands;
* :mod:`olmkit.apiserver.metrics`: ``apiserver_request_total`` and the open watches, on ``/metrics``;
* :mod:`olmkit.apiserver.certs`, :mod:`~olmkit.apiserver.server`: TLS, credentials, kubeconfig.

The HTTP layer is aiohttp, imported only when a server is built.

.. versionadded:: 0.2
"""
