//! `toolshed.homeassistant` against a loopback Home Assistant REST API.

use serde_json::{Value, json};

use super::services::{HASS_TOKEN, Service, homeassistant};
use super::{Curated, assert_clean};

fn config(base: String) -> Value {
    json!({ "base_url": base, "token": HASS_TOKEN })
}

#[tokio::test]
async fn iot_query_reads_one_entity_a_domain_and_an_area() {
    let hass = Service::start(homeassistant).await;
    let p = Curated::start("homeassistant", config(hass.origin()), hass.grant()).await;
    assert_eq!(p.tool_names(), ["iot_query", "iot_control"]);

    let one = p
        .ok("iot_query", json!({ "entity_id": "light.kitchen" }))
        .await;
    assert_eq!(one["count"], 1);
    assert_eq!(one["entities"][0]["name"], "Kitchen light");
    assert_eq!(one["entities"][0]["state"], "off");
    let seen = hass.requests();
    assert_eq!(seen[0].path, "/api/states/light.kitchen");
    assert_eq!(
        seen[0].header("authorization"),
        format!("Bearer {HASS_TOKEN}")
    );

    let lights = p.ok("iot_query", json!({ "domain": "sensor" })).await;
    assert_eq!(
        lights["entities"][0]["entity_id"],
        "sensor.kitchen_temperature"
    );
    assert_eq!(
        lights["entities"][0]["attributes"]["unit_of_measurement"],
        "°C"
    );

    let kitchen = p.ok("iot_query", json!({ "area": "Kitchen" })).await;
    let ids: Vec<&str> = kitchen["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["entity_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["light.kitchen", "sensor.kitchen_temperature"]);

    let all = p.ok("iot_query", json!({})).await;
    assert_eq!(all["count"], 3);

    // Unknown names are answered with the close ones.
    let e = p
        .fail("iot_query", json!({ "entity_id": "light.kitchn" }))
        .await;
    assert!(
        e.contains("no entity `light.kitchn`") && e.contains("`light.kitchen`"),
        "{e}"
    );
    let e = p.fail("iot_query", json!({ "area": "Kitchn" })).await;
    assert!(e.contains("`Kitchen`"), "{e}");
    let e = p.fail("iot_query", json!({ "domain": "climate" })).await;
    assert!(e.contains("light, sensor, switch"), "{e}");
}

#[tokio::test]
async fn iot_control_calls_the_service_with_the_entity_and_data() {
    let hass = Service::start(homeassistant).await;
    let p = Curated::start("homeassistant", config(hass.origin()), hass.grant()).await;

    let out = p
        .ok(
            "iot_control",
            json!({ "entity_id": "light.kitchen", "service": "light.turn_on", "data": { "brightness_pct": 40 } }),
        )
        .await;
    assert_eq!(
        out,
        json!({ "entity_id": "light.kitchen", "service": "light.turn_on",
                "changed": [{ "entity_id": "light.kitchen", "state": "on" }] })
    );
    let call = hass
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .unwrap();
    assert_eq!(call.path, "/api/services/light/turn_on");
    assert_eq!(
        call.json(),
        json!({ "entity_id": "light.kitchen", "brightness_pct": 40 })
    );
    assert_eq!(call.header("authorization"), format!("Bearer {HASS_TOKEN}"));

    // The service alone takes the entity's domain.
    let out = p
        .ok(
            "iot_control",
            json!({ "entity_id": "switch.hall", "service": "turn_off" }),
        )
        .await;
    assert_eq!(out["service"], "switch.turn_off");

    // A typo in the service is answered with the close names, and nothing is called.
    let before = hass
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .count();
    let e = p
        .fail(
            "iot_control",
            json!({ "entity_id": "light.kitchen", "service": "light.turn_onn" }),
        )
        .await;
    assert!(
        e.contains("no service `turn_onn`") && e.contains("`light.turn_on`"),
        "{e}"
    );
    let e = p
        .fail(
            "iot_control",
            json!({ "entity_id": "light.kitchen", "service": "lights.turn_on" }),
        )
        .await;
    assert!(
        e.contains("no service domain `lights`") && e.contains("`light`"),
        "{e}"
    );
    let after = hass
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .count();
    assert_eq!(before, after);
}

#[tokio::test]
async fn a_refused_token_says_how_to_set_a_new_one_and_never_shows_it() {
    let hass = Service::start(homeassistant).await;
    let p = Curated::start(
        "homeassistant",
        json!({ "base_url": hass.origin(), "token": "hassWrongToken0123456789" }),
        hass.grant(),
    )
    .await;
    let e = p.fail("iot_query", json!({})).await;
    assert!(
        e.contains("refused the access token (HTTP 401)")
            && e.contains("plugins config toolshed.homeassistant token -"),
        "{e}"
    );
    assert_clean(&e);

    // Without the grant, the host is named with the command that grants it.
    let p = Curated::start("homeassistant", config(hass.origin()), Vec::new()).await;
    let e = p.fail("iot_query", json!({})).await;
    assert!(
        e.contains("toolshed plugins grant toolshed.homeassistant http:127.0.0.1"),
        "{e}"
    );
}
