"""The package's log lines go where Ax's go, at the same level and in the same format.

Ax logs through the ``ax`` logger, which has its own stream handler on stderr
(``[INFO 11-27 10:00:00] ax.api.client: ...``) and does not pass records on to Python's
root logger. The package's loggers (``ax_kernel_discovery.*``, e.g. the round line of
``ax_kernel_discovery.surrogate.core``) are handled the same way by
:func:`use_ax_handler`, called when a :class:`~ax_kernel_discovery.KernelDiscoverySurrogate`
is built and by the command line (importing the package only gives its logger a
``logging.NullHandler``, as a library should):

* a record is written by Ax's own stream handler, so it has Ax's format and stream and
  obeys Ax's handler level (``set_stderr_log_level``);
* the package logger starts at Ax's default level (INFO), and
  ``ax.utils.common.logger.set_ax_logger_levels(level)`` sets it together with Ax's
  (it sets every logger whose name starts with ``ax``, ours included).

So one call quiets both::

    import logging
    from ax.utils.common.logger import set_ax_logger_levels

    set_ax_logger_levels(logging.WARNING)  # Ax's INFO lines and kd's round lines

Like Ax's, the package's records are not passed on to the root logger; to see them in
handlers of your own as well, ``logging.getLogger("ax_kernel_discovery").propagate = True``.
"""

from __future__ import annotations

import logging

__all__ = ["PACKAGE_LOGGER", "AxStreamHandler", "use_ax_handler"]

#: The logger every module of the package logs under (``logging.getLogger(__name__)``).
PACKAGE_LOGGER = "ax_kernel_discovery"


class AxStreamHandler(logging.Handler):
    """Hands each record to Ax's stream handler (``ax.utils.common.logger``), with the
    ``output_name`` that Ax's format needs; Ax's handler level applies.

    Ax's handler is looked up when a record is written, so a level set on it later
    (``set_stderr_log_level``, ``set_ax_logger_levels``) applies at once.
    """

    def emit(self, record: logging.LogRecord) -> None:
        from ax.utils.common.logger import ROOT_STREAM_HANDLER

        if not hasattr(record, "output_name"):
            record.output_name = record.name
        if record.levelno >= ROOT_STREAM_HANDLER.level:
            ROOT_STREAM_HANDLER.handle(record)


def use_ax_handler() -> logging.Logger:
    """Route the package's log records to Ax's stream handler (idempotent).

    Returns:
        The package logger (``ax_kernel_discovery``).
    """
    from ax.utils.common.logger import DEFAULT_LOG_LEVEL

    logger = logging.getLogger(PACKAGE_LOGGER)
    if not any(isinstance(h, AxStreamHandler) for h in logger.handlers):
        logger.addHandler(AxStreamHandler())
        logger.propagate = False
        if logger.level == logging.NOTSET:
            logger.setLevel(DEFAULT_LOG_LEVEL)
    return logger
