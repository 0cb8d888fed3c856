"""How a call travels: straight to the provider, on a Ray worker, or in a batch. One
interface (:class:`~aart.llm.transport.base.Transport`), chosen once per factory by an
:class:`~aart.llm.transport.base.Execution`."""
