"""Reports: the text, markdown, csv, json and MMTests exporters, the HTML report, plots and listings."""
