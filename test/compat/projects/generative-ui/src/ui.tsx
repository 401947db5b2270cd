import { useStreamContext } from "@langchain/langgraph-sdk/react-ui";
import { useState } from "react";
import "./ui.css";

function WeatherCard(props: { city: string; temperature: number }) {
  // The page's React and stream context reach the bundle: hooks and `useStreamContext` work.
  const [clicks, setClicks] = useState(0);
  const { meta } = useStreamContext<Record<string, unknown>, { MetaType: { page: string } }>();
  return (
    <button type="button" className="weather-card" onClick={() => setClicks(clicks + 1)}>
      Weather in {props.city}: {props.temperature}°C on {meta?.page}, clicked {clicks}
    </button>
  );
}

export default { weather: WeatherCard };
