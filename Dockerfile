# The crawl-ledger app image: one image, many roles (relay, worker --role …, CLI).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    LEDGER_DATA_DIR=/data
WORKDIR /app

COPY pyproject.toml README.md ./
COPY domain ./domain
COPY projections ./projections
COPY workers ./workers
COPY streams ./streams
COPY analytics ./analytics
COPY ledger ./ledger
RUN pip install . \
    && useradd --create-home --uid 10001 ledger \
    && mkdir -p /data && chown ledger /data

USER ledger
VOLUME ["/data"]
ENTRYPOINT ["crawl-ledger"]
CMD ["--help"]
