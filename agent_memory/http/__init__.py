"""The REST transport: the Flask app, its OpenAPI document, the waitress daemon, the web page."""
