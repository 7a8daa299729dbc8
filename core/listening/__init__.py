"""Listening tests with people: ``abx`` (the blind test one person takes on the page) and its store,
``mushra`` (BS.1534) with its screening, the shared tests listeners take from a link
(``shared_test_store`` over ``shared_test_db``, their schema, keys and limits) and the statistics
pooled over their listeners (``shared_test_results``, ``pooled_stats``)."""
