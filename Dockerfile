# The crawl-ledger app image: one image, many roles (relay, worker --role …, CLI).
# The project is installed as the wheel pyproject.toml builds, so the image holds
# exactly the packages the wheel declares (tests/integration/test_packaging.py).
FROM python:3.11-slim AS wheel
ENV PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY . .
RUN pip wheel --no-deps --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    LEDGER_DATA_DIR=/data
COPY --from=wheel /wheels /wheels
RUN pip install /wheels/*.whl && rm -rf /wheels \
    && useradd --create-home --uid 10001 ledger \
    && mkdir -p /data && chown ledger /data

USER ledger
WORKDIR /home/ledger
VOLUME ["/data"]
ENTRYPOINT ["crawl-ledger"]
CMD ["--help"]
