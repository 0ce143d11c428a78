"""The weekly report: render HTML and text, build and send the mail."""
